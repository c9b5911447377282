// The served models (server/ only): each opened model with its scheduler lanes, filled by the
// sessions gate and then opened, after which the set is complete and never changes. Lookups by
// name, and the image model an OpenAI `model` value names (through --model-alias aliases).
//
// Thread safety: Add and Open are called by the gate thread only, before any lookup can see the
// models; after Open every const method may be called from any thread (the set is immutable and
// Open publishes it with release/acquire ordering). Before Open, Find answers nullptr.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/api_errors.h"
#include "server/gates.h"
#include "server/lanes.h"

namespace tg::server {

struct ModelRuntime {
  std::unique_ptr<LoadedModel> model;
  std::vector<std::unique_ptr<Lane>> lanes;  // SD: small, large; ONNX: one
};

class ModelRegistry {
 public:
  using Map = std::map<std::string, std::unique_ptr<ModelRuntime>>;

  void Add(const std::string& name, std::unique_ptr<ModelRuntime> m) {
    models_[name] = std::move(m);
  }
  void Open() { open_.store(true, std::memory_order_release); }
  bool open() const { return open_.load(std::memory_order_acquire); }
  // Every model by name: for the gate thread, or for anyone once open().
  const Map& all() const { return models_; }
  ModelRuntime* Find(const std::string& name) const;
  // The image model `requested` names ("" = the only image model), mapping it through `aliases`
  // first; nullptr with *err set (404 model_not_found, or 400 when several could be meant).
  ModelRuntime* ImageModel(const std::string& requested,
                           const std::map<std::string, std::string>& aliases, ApiError* err) const;

 private:
  Map models_;
  std::atomic<bool> open_{false};
};

}  // namespace tg::server
