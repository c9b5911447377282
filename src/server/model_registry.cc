#include "server/model_registry.h"

namespace tg::server {

using common::Status;

ModelRuntime* ModelRegistry::Find(const std::string& name) const {
  if (!open()) return nullptr;
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second.get();
}

ModelRuntime* ModelRegistry::ImageModel(const std::string& requested,
                                        const std::map<std::string, std::string>& aliases,
                                        ApiError* err) const {
  std::string name = requested;
  if (auto it = aliases.find(name); it != aliases.end()) name = it->second;
  if (name.empty()) {
    ModelRuntime* mr = nullptr;
    for (const auto& [n, m] : models_) {
      if (!m->model->sd) continue;
      if (mr) {
        *err = ApiError::From(
            Status::InvalidArg("several image models are served: name one in 'model'"), "model",
            "invalid_value");
        return nullptr;
      }
      mr = m.get();
    }
    if (!mr) {
      *err =
          ApiError::From(Status::NotFound("no image model is served"), "model", "model_not_found");
    }
    return mr;
  }
  ModelRuntime* mr = Find(name);
  if (!mr || !mr->model->sd) {
    *err =
        ApiError::From(Status::NotFound("the model '" + requested.substr(0, 64) +
                                        "' does not exist or is not an image model (GET "
                                        "/v1/models lists them; --model-alias maps other names)"),
                       "model", "model_not_found");
    return nullptr;
  }
  return mr;
}

}  // namespace tg::server
