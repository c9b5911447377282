#include "cli/help.h"

#include <algorithm>
#include <map>
#include <memory>

#include "cli/output.h"
#include "cli/policy_option.h"
#include "common/strings.h"

namespace tg::cli {
namespace {

// One example per command, shown at the end of its --help (and dumped by __cli-tree, where a test
// checks that every flag it uses exists). Keyed by command path.
const std::map<std::string, std::string>& Examples() {
  static const auto* kExamples = new std::map<std::string, std::string>{
      {"probe", "truegreen probe --json > node.json"},
      {"admit", "truegreen admit --matrix deploy/matrix.production.yaml --snapshot node.json"},
      {"doctor", "truegreen doctor --policy deploy/policy.production.yaml"},
      {"diff", "truegreen diff node-a.json node-b.json --ignore host.kernel"},
      {"logscan", "truegreen logscan --json /var/log/replica.log"},
      {"run", "truegreen --policy dev run --model model.onnx --runs 100"},
      {"engines build",
       "truegreen engines build --model unet.onnx --matrix deploy/matrix.production.yaml "
       "--shapes sample:2x4x64x64"},
      {"engines verify",
       "truegreen engines verify --config engines.yaml --gpu-name 'NVIDIA L4' "
       "--compute-capability 8.9"},
      {"tokenize",
       "truegreen tokenize --tokenizer MODEL_DIR/tokenizer --tokens 'a photo of a cat'"},
      {"schedule",
       "truegreen schedule --config MODEL_DIR/scheduler/scheduler_config.json --scheduler euler "
       "--steps 20"},
      {"generate",
       "truegreen generate --model MODEL_DIR --prompt 'a photo of a cat' --steps 20 -o cat.png"},
      {"audit image", "truegreen audit image build/image/truegreen.tar --budget 2GiB"},
      {"audit dockerfile", "truegreen audit dockerfile deploy/Dockerfile --json"},
      {"audit k8s", "truegreen audit k8s deploy/k8s --matrix deploy/matrix.production.yaml"},
      {"k8s render",
       "truegreen k8s render --matrix deploy/matrix.production.yaml --image "
       "registry.example/truegreen@sha256:DIGEST"},
      {"k8s promote",
       "truegreen k8s promote --service truegreen --color green --baseline-configmap "
       "truegreen-baseline --baseline-file /gate/candidate.json"},
      {"k8s wait-ready", "truegreen k8s wait-ready --deployment truegreen-green --timeout-s 900"},
      {"serve",
       "truegreen serve --models /models --matrix deploy/matrix.production.yaml --host 0.0.0.0 "
       "--port 8000"},
      {"bench",
       "truegreen bench --url http://127.0.0.1:8000 --api openai --concurrency 1,8 "
       "--slo 'p95<8s' --out run.json"},
      {"compare", "truegreen compare before.json after.json --fail-on 'p95 +10%'"},
      {"help", "truegreen help audit image"},
  };
  return *kExamples;
}

bool Hidden(const CLI::App* a) { return a->get_group().empty(); }

// Flags are declared with expected(0); options that take a value expect at least one.
bool TakesValue(const CLI::Option* o) { return o->get_expected_max() > 0; }

std::vector<const CLI::App*> Children(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}
std::vector<CLI::App*> Children(CLI::App& app) {
  return app.get_subcommands([](CLI::App*) { return true; });
}

// Option names as typed: "--json", "-o,--output" -> the long and short forms.
std::vector<std::string> OptionNames(const CLI::Option* o) {
  std::vector<std::string> names;
  for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  for (const auto& s : o->get_snames()) names.push_back("-" + s);
  if (names.empty()) names.push_back(o->get_name());  // positional
  return names;
}

const CLI::Option* FindFlag(const CLI::App* app, const std::string& name) {
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      if (o->nonpositional() && o->check_name(name)) return o;
    }
  }
  return nullptr;
}

std::string GlobalOptionsText(const CLI::App& root) {
  std::string out = "Global options (before or after the command):\n";
  for (const CLI::Option* o : root.get_options()) {
    if (!o->nonpositional() || o->get_name() == "--help") continue;
    std::string line = "  " + o->get_name(false, true);
    if (TakesValue(o) && !o->get_type_name().empty()) line += " " + o->get_type_name();
    if (line.size() < 30) line.resize(30, ' ');
    out += line + " " + o->get_description() + "\n";
  }
  return out;
}

std::string Nearest(const std::string& word, const std::vector<const CLI::App*>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const CLI::App* c : candidates) {
    if (Hidden(c)) continue;
    const std::size_t d = common::EditDistance(word, c->get_name());
    if (d < best_d) {
      best_d = d;
      best = c->get_name();
    }
  }
  // A suggestion further than half the word away is noise.
  return best_d <= std::max<std::size_t>(2, word.size() / 2) ? best : "";
}

common::Status UnknownCommand(const CLI::App& parent, const std::string& word) {
  const std::string where = CommandPath(&parent);
  std::string names;
  for (const CLI::App* c : Children(parent)) {
    if (!Hidden(c)) names += (names.empty() ? "" : ", ") + c->get_name();
  }
  std::string msg =
      "unknown command '" + word + "'" + (where.empty() ? "" : " for 'truegreen " + where + "'");
  const std::string near = Nearest(word, Children(parent));
  if (!near.empty()) {
    msg += "; did you mean '" + (where.empty() ? "" : where + " ") + near + "'?";
  }
  msg += " (commands: " + names + "; see `truegreen help`)";
  return common::Status::InvalidArg(msg);
}

int RunHelp(CLI::App& root, const std::vector<std::string>& words) {
  const CLI::App* at = &root;
  for (const std::string& w : words) {
    const CLI::App* next = nullptr;
    for (const CLI::App* c : Children(*at)) {
      if (c->get_name() == w) next = c;
    }
    if (next == nullptr) return ReportError(UnknownCommand(*at, w));
    at = next;
  }
  // Formatted directly: App::help() would delegate to the selected subcommand, which is `help`.
  const std::string parent = at == &root ? "" : CommandPath(at->get_parent());
  const std::string prev = at == &root      ? "truegreen"
                           : parent.empty() ? "truegreen " + at->get_name()
                                            : "truegreen " + parent + " " + at->get_name();
  Print(at->get_formatter()->make_help(at, prev, CLI::AppFormatMode::Normal));
  return common::kExitOk;
}

common::Json OptionJson(const CLI::Option* o) {
  return {{"name", o->get_name(false, true)},  {"names", OptionNames(o)},
          {"positional", !o->nonpositional()}, {"takes_value", TakesValue(o)},
          {"type_name", o->get_type_name()},   {"description", o->get_description()}};
}

}  // namespace

std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (const CLI::App* a = app; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  }
  return path;
}

void RegisterHelpCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto words = std::make_shared<std::vector<std::string>>();
  CLI::App* help = app.add_subcommand("help", "Show the help of truegreen or of one command");
  help->add_option("command", *words, "Command path, e.g. `audit image` (default: all commands)")
      ->type_name("COMMAND");
  r.Add(help, [&app, words] { return RunHelp(app, *words); });

  CLI::App* tree = app.add_subcommand("__cli-tree", "Dump the CLI definition as JSON (tests)");
  tree->group("");  // hidden from help
  r.Add(tree, [&app] {
    PrintJson(CliTree(app));
    return common::kExitOk;
  });
}

void AddHelpFooters(CLI::App& app) {
  const std::string globals = GlobalOptionsText(app);
  std::vector<CLI::App*> todo = Children(app);
  while (!todo.empty()) {
    CLI::App* a = todo.back();
    todo.pop_back();
    std::string examples;
    const auto it = Examples().find(CommandPath(a));
    if (it != Examples().end()) examples = "  " + it->second + "\n";
    for (CLI::App* c : Children(*a)) {
      todo.push_back(c);
      const auto ce = Examples().find(CommandPath(c));
      if (ce != Examples().end()) examples += "  " + ce->second + "\n";
    }
    a->footer("\n" + globals + (examples.empty() ? "" : "\nExample:\n" + examples));
  }
  app.footer("\n" + globals +
             "\nRun `truegreen help COMMAND` for a command's options and an example.\n"
             "Exit codes: 0 pass, 1 internal error, 2 usage or configuration, 3 integrity (no "
             "usable GPU path), 4 version drift, 5 performance gate, 6 audit failed.");
}

common::Status CheckCommandWords(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a.size() > 1 && a[0] == '-') {
      // A flag: skip its value when it takes one and it was not given as --flag=value.
      const std::string name = a.substr(0, a.find('='));
      const CLI::Option* o = FindFlag(at, name);
      if (o != nullptr && TakesValue(o) && a.find('=') == std::string::npos) ++i;
      continue;
    }
    if (Children(*at).empty()) break;  // a leaf's positional argument
    const CLI::App* next = nullptr;
    for (const CLI::App* c : Children(*at)) {
      if (c->get_name() == a) next = c;
    }
    if (next == nullptr) return UnknownCommand(*at, a);
    at = next;
  }
  const bool help = std::find(args.begin(), args.end(), "--help") != args.end() ||
                    std::find(args.begin(), args.end(), "-h") != args.end();
  if (!help && !Children(*at).empty()) {
    std::string names;
    for (const CLI::App* c : Children(*at)) {
      if (!Hidden(c)) names += (names.empty() ? "" : ", ") + c->get_name();
    }
    const std::string path = CommandPath(at);
    return common::Status::InvalidArg(
        "a command is required: truegreen " + (path.empty() ? "" : path + " ") + "COMMAND (" +
        names + "; see `truegreen help" + (path.empty() ? "" : " " + path) + "`)");
  }
  return common::Status::Ok();
}

common::Json CliTree(const CLI::App& app) {
  common::Json j = {{"name", app.get_name()},
                    {"path", CommandPath(&app)},
                    {"description", app.get_description()},
                    {"hidden", Hidden(&app)},
                    {"reads_policy", CommandReadsPolicy(CommandPath(&app))}};
  const auto ex = Examples().find(CommandPath(&app));
  j["example"] = ex == Examples().end() ? "" : ex->second;
  common::Json opts = common::Json::array();
  for (const CLI::Option* o : app.get_options()) opts.push_back(OptionJson(o));
  j["options"] = std::move(opts);
  common::Json subs = common::Json::array();
  for (const CLI::App* c : Children(app)) subs.push_back(CliTree(*c));
  j["subcommands"] = std::move(subs);
  return j;
}

}  // namespace tg::cli
