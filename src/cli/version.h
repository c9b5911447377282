// `truegreen --version`: truegreen's version and git commit, and the ONNX Runtime version this
// build bundles (third_party/, pinned by scripts/setup.sh). The commit and the ORT version are
// baked in at configure time into src/cli/version.cc only, so no other object depends on them
// and ccache keeps sharing every other object between checkouts and commits.
#pragma once

namespace tg::cli {

// Prints the version text (or, with `json`, one object {"truegreen","commit","onnxruntime"}) on
// stdout.
void PrintVersion(bool json);

}  // namespace tg::cli
