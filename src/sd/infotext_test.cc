// A1111 infotext: the exact text written, its parse (including A1111's own output and quoting),
// sampler names, and the pipeline hash.
#include "sd/infotext.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/test_util.h"

namespace tg::sd {
namespace {

GenerationParameters Sample() {
  GenerationParameters p;
  p.prompt = "a photo of a cat";
  p.negative_prompt = "blurry, low quality";
  p.steps = 30;
  p.sampler = std::string(A1111SamplerName("euler_a"));
  p.cfg_scale = 7.5;
  p.seed = 42;
  p.width = 1216;
  p.height = 832;
  p.model_hash = "0123456789";
  p.version = "truegreen 0.1.0";
  return p;
}

TEST(InfotextTest, WritesA1111Layout) {
  EXPECT_EQ(FormatInfotext(Sample()),
            "a photo of a cat\n"
            "Negative prompt: blurry, low quality\n"
            "Steps: 30, Sampler: Euler a, CFG scale: 7.5, Seed: 42, Size: 1216x832, "
            "Model hash: 0123456789, Version: truegreen 0.1.0");
  GenerationParameters p = Sample();
  p.negative_prompt.reset();
  p.cfg_scale = 7.0;  // Python's repr keeps ".0"
  p.model_hash.clear();
  EXPECT_EQ(FormatInfotext(p),
            "a photo of a cat\n"
            "Steps: 30, Sampler: Euler a, CFG scale: 7.0, Seed: 42, Size: 1216x832, "
            "Version: truegreen 0.1.0");
}

TEST(InfotextTest, SamplerNamesAreA1111s) {
  EXPECT_EQ(A1111SamplerName("euler"), "Euler");
  EXPECT_EQ(A1111SamplerName("dpmpp_2m_karras"), "DPM++ 2M Karras");
  EXPECT_EQ(A1111SamplerName("dpmpp_2m"), "DPM++ 2M");
  EXPECT_EQ(A1111SamplerName("ddim"), "DDIM");
  EXPECT_EQ(A1111SamplerName("pndm"), "PLMS");  // A1111 has no "PNDM"
  EXPECT_EQ(A1111SamplerName("euler_a"), "Euler a");
  EXPECT_EQ(A1111SamplerName("lms"), "LMS");
  EXPECT_EQ(A1111SamplerName("something_new"), "something_new");
}

TEST(InfotextTest, ReadmeListsTheSamplerNames) {
  const std::string readme = testing::ReadFile(testing::SourceDir() + "/README.md");
  for (const char* s : {"pndm", "ddim", "euler", "euler_a", "dpmpp_2m", "dpmpp_2m_karras", "lms"}) {
    const std::string row_start = "| `" + std::string(s) + "` | ";
    const std::string row_end = " | `" + std::string(A1111SamplerName(s)) + "` |\n";
    const std::size_t at = readme.find(row_start);
    ASSERT_NE(at, std::string::npos) << s;
    const std::size_t eol = readme.find('\n', at);
    EXPECT_EQ(readme.substr(eol + 1 - row_end.size(), row_end.size()), row_end) << s;
  }
}

TEST(InfotextTest, RoundTripsIncludingMultiLinePromptsAndQuotedValues) {
  GenerationParameters p = Sample();
  p.prompt = "line one\nline two: with colon";
  p.negative_prompt = "";
  p.sampler = "odd, name";  // a value with a comma is written as a JSON string
  const std::string text = FormatInfotext(p);
  EXPECT_NE(text.find("Sampler: \"odd, name\""), std::string::npos) << text;
  auto back = ParseInfotext(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->prompt, p.prompt);
  EXPECT_EQ(back->negative_prompt, std::optional<std::string>(""));  // given, empty
  EXPECT_EQ(back->sampler, "odd, name");
  EXPECT_EQ(back->steps, 30);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->cfg_scale, 7.5);
  EXPECT_EQ(back->width, 1216);
  EXPECT_EQ(back->height, 832);
  EXPECT_EQ(back->model_hash, "0123456789");
  EXPECT_EQ(back->version, "truegreen 0.1.0");
}

TEST(InfotextTest, AbsentAndEmptyNegativePromptsDiffer) {
  GenerationParameters p = Sample();
  p.negative_prompt.reset();
  const std::string absent = FormatInfotext(p);
  p.negative_prompt = "";
  const std::string empty = FormatInfotext(p);
  EXPECT_EQ(absent.find("Negative prompt:"), std::string::npos) << absent;
  EXPECT_NE(empty.find("\nNegative prompt: \n"), std::string::npos) << empty;
  EXPECT_FALSE(ParseInfotext(absent)->negative_prompt.has_value());
  EXPECT_EQ(ParseInfotext(empty)->negative_prompt, std::optional<std::string>(""));
}

// A reader of A1111's documented infotext layout, written apart from ours (Python, stdlib only):
// the last line holds the parameters ("Key: value" separated by ", ", a value that starts with a
// double quote is a JSON string); the lines before it are the prompt up to a line starting with
// "Negative prompt:", the rest the negative prompt. Prints the fields as one JSON object.
constexpr const char* kA1111Reader = R"PY(
import json, sys
text = open(sys.argv[1], encoding='utf-8').read().strip()
lines = text.split('\n')
def params(line):
    out, i, n = {}, 0, len(line)
    while i < n:
        while i < n and line[i] == ' ': i += 1
        colon = line.find(':', i)
        if colon < 0: break
        key, i = line[i:colon].strip(), colon + 1
        while i < n and line[i] == ' ': i += 1
        if i < n and line[i] == '"':
            value, i = json.JSONDecoder().raw_decode(line, i)
        else:
            end = line.find(',', i)
            end = n if end < 0 else end
            value, i = line[i:end].strip(), end
        out[key] = value
        if i < n and line[i] == ',': i += 1
    return out
fields = params(lines[-1])
if len(fields) >= 3: lines = lines[:-1]
else: fields = {}
prompt, negative, in_negative = [], None, False
for line in lines:
    line = line.strip()
    if not in_negative and line.startswith('Negative prompt:'):
        in_negative, negative, line = True, [], line[len('Negative prompt:'):].strip()
    (negative if in_negative else prompt).append(line)
w, h = fields.get('Size', '0x0').split('x')
print(json.dumps({'prompt': '\n'.join(prompt),
                  'negative': None if negative is None else '\n'.join(negative),
                  'steps': int(fields['Steps']), 'sampler': fields['Sampler'],
                  'cfg': float(fields['CFG scale']), 'seed': int(fields['Seed']),
                  'width': int(w), 'height': int(h), 'model': fields.get('Model'),
                  'model_hash': fields.get('Model hash')}))
)PY";

TEST(InfotextTest, A1111ReaderGetsBackEveryField) {
  GenerationParameters a = Sample();
  a.model = "sdxl-turbo";
  GenerationParameters b = Sample();
  b.prompt = "a cat, \"quoted\": yes\nsecond line";
  b.negative_prompt = "";
  b.sampler = std::string(A1111SamplerName("pndm"));
  b.cfg_scale = 7.0;
  b.seed = 4294967295u;
  b.model = "sd15, fine-tune";  // a comma: written as a JSON string
  GenerationParameters c = Sample();
  c.negative_prompt.reset();
  c.sampler = std::string(A1111SamplerName("dpmpp_2m_karras"));
  c.seed = 18446744073709551615u;
  c.model = "sd15";
  for (const GenerationParameters& p : {a, b, c}) {
    testing::TempDir d;
    const std::string text = FormatInfotext(p);
    testing::WriteFile(d / "infotext.txt", text);
    auto r = testing::RunProcess({testing::SystemPython(), "-c", kA1111Reader, d / "infotext.txt"});
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << text;
    auto j = common::Json::parse(r.out);
    EXPECT_EQ(j["prompt"], p.prompt) << text;
    if (p.negative_prompt) {
      EXPECT_EQ(j["negative"], *p.negative_prompt) << text;
    } else {
      EXPECT_TRUE(j["negative"].is_null()) << text;
    }
    EXPECT_EQ(j["steps"], p.steps);
    EXPECT_EQ(j["sampler"], p.sampler);
    EXPECT_EQ(j["cfg"].get<double>(), p.cfg_scale);
    EXPECT_EQ(j["seed"].get<std::uint64_t>(), p.seed);
    EXPECT_EQ(j["width"], p.width);
    EXPECT_EQ(j["height"], p.height);
    EXPECT_EQ(j["model"], p.model) << text;
    EXPECT_EQ(j["model_hash"], p.model_hash);
  }
}

TEST(InfotextTest, ParsesWhatA1111Writes) {
  // Shape of a web UI 1.x infotext, with fields truegreen does not write.
  auto p = ParseInfotext(
      "masterpiece, 1girl, blonde hair\n"
      "Negative prompt: (worst quality:1.4), watermark\n"
      "Steps: 20, Sampler: DPM++ 2M Karras, CFG scale: 7, Seed: 2179987202, Size: 768x512, "
      "Model hash: 93b79e09ed, Model: anything-v4.5, Clip skip: 2, "
      "Lora hashes: \"a: 1234, b: 5678\", Version: v1.6.0");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->prompt, "masterpiece, 1girl, blonde hair");
  EXPECT_EQ(p->negative_prompt, "(worst quality:1.4), watermark");
  EXPECT_EQ(p->steps, 20);
  EXPECT_EQ(p->sampler, "DPM++ 2M Karras");
  EXPECT_EQ(p->cfg_scale, 7.0);
  EXPECT_EQ(p->seed, 2179987202u);
  EXPECT_EQ(p->width, 768);
  EXPECT_EQ(p->model_hash, "93b79e09ed");
  EXPECT_EQ(p->model, "anything-v4.5");
  EXPECT_EQ(p->version, "v1.6.0");
  // Only a prompt: no parameter line.
  auto only = ParseInfotext("just a prompt, with: a colon");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->prompt, "just a prompt, with: a colon");
  EXPECT_EQ(only->steps, 0);
}

TEST(InfotextTest, MalformedKnownFieldsAreNamed) {
  auto r = ParseInfotext("x\nSteps: many, Sampler: Euler, CFG scale: 7");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(r.status().message().find("'Steps'"), std::string::npos) << r.status().message();
  auto s = ParseInfotext("x\nSteps: 3, Sampler: Euler, Size: 512by512");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("WIDTHxHEIGHT"), std::string::npos);
}

TEST(InfotextTest, PipelineHashFollowsTheUnetFiles) {
  testing::TempDir dir;
  EXPECT_EQ(PipelineHash(dir.path()).status().code(), common::StatusCode::kNotFound);
  std::filesystem::create_directories(dir / "unet");
  testing::WriteFile(dir / "unet/model.onnx", "graph");
  testing::WriteFile(dir / "unet/model.onnx_data", "weights");
  testing::WriteFile(dir / "text_encoder.onnx", "not part of the hash");
  auto a = PipelineHash(dir.path());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->size(), 10u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos);
  testing::WriteFile(dir / "text_encoder.onnx", "changed");
  EXPECT_EQ(*PipelineHash(dir.path()), *a);
  testing::WriteFile(dir / "unet/model.onnx_data", "weightz");
  EXPECT_NE(*PipelineHash(dir.path()), *a);
}

}  // namespace
}  // namespace tg::sd
