// End-to-end tests of the loader and the denoising loop on the small generated pipelines of the
// published architectures (tools/gen_sd.py at width 0.1, depth 0.25 → <build>/models/sd-tiny/
// <variant>), run on real ONNX Runtime sessions with the dev policy (CPU). At that width the text
// encoders are 64 (CLIP ViT-L/14), 96 (OpenCLIP ViT-H) and 128 (OpenCLIP ViT-bigG, projection 128)
// wide, with 3, 6 and 8 layers; the widths below are those.
#include "sd/pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "sd/infotext.h"
#include "sd/model_loader.h"
#include "tests/support/test_util.h"

namespace tg::sd {
namespace {

namespace fs = std::filesystem;
using common::StatusCode;
using runtime::DataType;

std::string TinyDir(const std::string& variant) {
  return tg::testing::BinaryDir() + "/models/sd-tiny/" + variant;
}

// The factory and the loaded models live until every test has run, and are destroyed before the
// process exits: a session kept alive into exit() leaves ONNX Runtime's pool threads running while
// the library's static objects are destroyed (ASan reports the read after free).
struct SharedModels {
  std::unique_ptr<runtime::SessionFactory> factory;
  std::map<std::string, std::unique_ptr<SdModel>> cache;  // per variant
};
SharedModels& Shared() {
  static auto* shared = new SharedModels();
  return *shared;
}
class SharedModelsEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    Shared().cache.clear();  // models hold sessions made by the factory: they go first
    Shared().factory.reset();
  }
};
[[maybe_unused]] ::testing::Environment* const kSharedModelsEnvironment =
    ::testing::AddGlobalTestEnvironment(new SharedModelsEnvironment);

const runtime::SessionFactory& Factory() {
  std::unique_ptr<runtime::SessionFactory>& factory = Shared().factory;
  if (factory == nullptr) {
    auto ort = runtime::OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
    if (!ort.ok()) {
      ADD_FAILURE() << "ONNX Runtime: " << ort.status().ToString();
      std::abort();
    }
    auto f = runtime::SessionFactory::Create(runtime::DevPolicy(), **ort);
    if (!f.ok()) {
      ADD_FAILURE() << "dev SessionFactory: " << f.status().ToString();
      std::abort();
    }
    factory = std::make_unique<runtime::SessionFactory>(std::move(f).value());
  }
  return *factory;
}

// Loaded models are cached per variant: loading is the slow part of these tests.
const SdModel& Model(const std::string& variant) {
  auto& cache = Shared().cache;
  auto it = cache.find(variant);
  if (it == cache.end()) {
    auto m = LoadSdModel(TinyDir(variant), Factory());
    if (!m.ok()) {
      ADD_FAILURE() << variant << ": " << m.status().ToString()
                    << " (are the tiny pipelines generated? target sd_tiny_models)";
      std::abort();
    }
    it = cache.emplace(variant, std::move(m).value()).first;
  }
  return *it->second;
}

GenerateRequest SmallRequest() {
  GenerateRequest r;
  r.prompt = "a photo of a cat";
  r.steps = 2;
  r.width = 256;
  r.height = 256;
  return r;
}

// Pixel spread: a valid but constant image would mean the pipeline lost its input somewhere.
double PixelStddev(const RgbImage& img) {
  double s = 0, s2 = 0;
  for (auto p : img.pixels) {
    s += p;
    s2 += static_cast<double>(p) * p;
  }
  const double n = static_cast<double>(img.pixels.size());
  return std::sqrt(std::max(0.0, s2 / n - (s / n) * (s / n)));
}

TEST(SdLoaderTest, DetectsLegacySd15) {
  const SdModel& m = Model("sd15-legacy");
  EXPECT_EQ(m.style, ExportStyle::kLegacy);
  EXPECT_EQ(m.pipeline_class, "OnnxStableDiffusionPipeline");
  EXPECT_EQ(m.variant, SdVariant::kSd1);
  EXPECT_FALSE(m.fp16);
  EXPECT_EQ(m.text_encoder.ids_dtype, DataType::kInt32);
  EXPECT_EQ(m.unet.timestep_dtype, DataType::kFloat32);
  EXPECT_EQ(m.unet.timestep_layout, TimestepLayout::kSingle);
  EXPECT_EQ(m.unet.context_size, 64);
  EXPECT_EQ(m.text_encoder.hidden_size, 64);
  EXPECT_DOUBLE_EQ(m.vae.scaling_factor, 0.18215);
  EXPECT_EQ(m.tokenizer->pad_id(), 49407);
  EXPECT_EQ(m.scheduler_config.class_name, "PNDMScheduler");
  EXPECT_TRUE(m.degraded()) << "dev policy on CPU must be marked degraded";
}

TEST(SdLoaderTest, DetectsOptimumVariants) {
  const SdModel& o = Model("sd15-optimum");
  EXPECT_EQ(o.style, ExportStyle::kOptimum);
  EXPECT_EQ(o.text_encoder.ids_dtype, DataType::kInt64);
  EXPECT_EQ(o.unet.timestep_dtype, DataType::kInt64);
  EXPECT_EQ(o.unet.timestep_layout, TimestepLayout::kBatched);

  const SdModel& h = Model("sd15-optimum-fp16");
  EXPECT_TRUE(h.fp16);
  EXPECT_EQ(h.unet.timestep_dtype, DataType::kFloat16);
  EXPECT_EQ(h.unet.timestep_layout, TimestepLayout::kScalar);
  EXPECT_EQ(h.vae.latent_dtype, DataType::kFloat16);

  const SdModel& s2 = Model("sd21-optimum");
  EXPECT_EQ(s2.variant, SdVariant::kSd2);
  EXPECT_EQ(s2.scheduler_config.prediction_type, PredictionType::kVPrediction);
  EXPECT_EQ(s2.unet.context_size, 96);
  EXPECT_EQ(s2.tokenizer->pad_id(), 0);
  EXPECT_EQ(s2.default_size, 768);

  const SdModel& xl = Model("sdxl-optimum-fp16");
  EXPECT_EQ(xl.variant, SdVariant::kSdxl);
  ASSERT_TRUE(xl.text_encoder_2.has_value());
  EXPECT_EQ(xl.text_encoder.hidden_name, "hidden_states.2");     // penultimate of 0..3
  EXPECT_EQ(xl.text_encoder_2->hidden_name, "hidden_states.7");  // penultimate of 0..8
  EXPECT_EQ(xl.text_encoder_2->pooled_name, "text_embeds");
  EXPECT_EQ(xl.unet.context_size, 64 + 128);
  EXPECT_EQ(xl.unet.text_embeds_size, 128);
  EXPECT_TRUE(xl.fp16);
  EXPECT_EQ(xl.vae.latent_dtype, DataType::kFloat32) << "SDXL decodes in fp32";
  EXPECT_DOUBLE_EQ(xl.vae.scaling_factor, 0.13025);
  EXPECT_EQ(xl.vae.scaling_source, "vae_decoder/config.json");
  EXPECT_EQ(xl.tokenizer_2->pad_id(), 0);
  EXPECT_DOUBLE_EQ(xl.default_guidance, 5.0);
}

class SdVariantTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SdVariantTest, GeneratesAValidPngOfTheRequestedSize) {
  const SdModel& m = Model(GetParam());
  Pipeline p(m);
  GenerateRequest r = SmallRequest();
  r.width = 320;  // non-square
  int calls = 0;
  auto out = p.Generate(r, [&](const StepProgress& s) {
    ++calls;
    EXPECT_EQ(s.step, calls);
    return true;
  });
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->images.size(), 1u);
  EXPECT_FALSE(out->cancelled);
  EXPECT_EQ(calls, out->steps_done);
  EXPECT_EQ(static_cast<int>(out->timings.unet_ms.size()), calls);
  auto png = DecodePng(out->images[0].png, GetParam());
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->width, 320);
  EXPECT_EQ(png->height, 256);
  EXPECT_EQ(png->pixels, out->images[0].image.pixels);
  EXPECT_GT(PixelStddev(png.value()), 1.0) << "image is flat";
}

INSTANTIATE_TEST_SUITE_P(TinyExports, SdVariantTest,
                         ::testing::Values("sd15-legacy", "sd15-optimum", "sd15-optimum-fp16",
                                           "sd21-optimum", "sdxl-optimum", "sdxl-optimum-fp16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(SdPipelineTest, PndmRunsOneMoreUnetCallThanSteps) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.steps = 4;
  auto out = p.Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->scheduler, "pndm");
  EXPECT_EQ(out->timings.unet_ms.size(), 5u);
}

// The tiled decode (sd/vae_tiling.h) against the whole one on the same latents: 640x640 is 2x2
// tiles of 64 latents (starts 0 and 48). A random-weight VAE sees only its tile's latents, so the
// seams are not exact; the difference is measured (docs/PERFORMANCE.md) and bounded here.
TEST(SdPipelineTest, TiledDecodeStaysCloseToTheWholeDecode) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.width = r.height = 640;
  r.steps = 1;
  r.encode_png = false;
  r.vae_tiling = VaeTiling::kOff;
  auto whole = p.Generate(r);
  r.vae_tiling = VaeTiling::kOn;
  auto tiled = p.Generate(r);
  ASSERT_TRUE(whole.ok() && tiled.ok());
  const auto& a = whole->images[0].image.pixels;
  const auto& b = tiled->images[0].image.pixels;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), 640u * 640u * 3u);
  double sum = 0;
  int max_diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const int d = std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
    sum += d;
    max_diff = std::max(max_diff, d);
  }
  const double mean = sum / static_cast<double>(a.size());
  ::testing::Test::RecordProperty("seam_mean_abs_diff_x1000", static_cast<int>(mean * 1000));
  ::testing::Test::RecordProperty("seam_max_abs_diff", max_diff);
  std::printf("tiled vs whole decode at 640x640: mean |diff| %.3f, max %d (of 255)\n", mean,
              max_diff);
  EXPECT_GT(max_diff, 0) << "tiles that see only their latents cannot match exactly";
  EXPECT_LT(mean, 8.0) << "mean |diff| " << mean;
}

TEST(SdPipelineTest, SameSeedIsBitIdenticalAndSeedsDiffer) {
  Pipeline p(Model("sd15-optimum"));
  GenerateRequest r = SmallRequest();
  r.seed = 42;
  auto a = p.Generate(r);
  auto b = p.Generate(r);
  r.seed = 43;
  auto c = p.Generate(r);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->images[0].png, b->images[0].png);
  EXPECT_NE(a->images[0].png, c->images[0].png);
}

TEST(SdPipelineTest, BatchImageKMatchesSingleImageWithSeedPlusK) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.batch = 2;
  r.seed = 7;
  auto batch = p.Generate(r);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->images.size(), 2u);
  EXPECT_EQ(batch->images[0].seed, 7u);
  EXPECT_EQ(batch->images[1].seed, 8u);
  EXPECT_NE(batch->images[0].png, batch->images[1].png);
  r.batch = 1;
  r.seed = 8;
  auto single = p.Generate(r);
  ASSERT_TRUE(single.ok());
  const auto& x = batch->images[1].image.pixels;
  const auto& y = single->images[0].image.pixels;
  ASSERT_EQ(x.size(), y.size());
  int max_diff = 0;
  for (std::size_t i = 0; i < x.size(); ++i) max_diff = std::max(max_diff, std::abs(x[i] - y[i]));
  EXPECT_LE(max_diff, 1) << "image 1 of a batch must be the seed+1 image";
}

TEST(SdPipelineTest, NumpyLatentsMatchRandomStateSeed0) {
  auto v = InitialNoise(RngMode::kNumpy, 0, 64, 64);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size(), 4u * 64 * 64);
  EXPECT_NEAR((*v)[0], 1.76405235, 1e-7);
  EXPECT_NEAR((*v)[1], 0.40015721, 1e-7);
  EXPECT_NEAR((*v)[2], 0.97873798, 1e-7);
}

TEST(SdPipelineTest, EverySchedulerRunsOnTheTinyModel) {
  Pipeline p(Model("sd15-optimum"));
  for (const std::string& name : SchedulerNames()) {
    GenerateRequest r = SmallRequest();
    r.scheduler = name;
    r.steps = 3;
    auto out = p.Generate(r);
    ASSERT_TRUE(out.ok()) << name << ": " << out.status().ToString();
    EXPECT_EQ(out->scheduler, name);
    EXPECT_GT(PixelStddev(out->images[0].image), 1.0) << name;
  }
}

TEST(SdPipelineTest, AncestralSamplingIsReproducible) {
  Pipeline p(Model("sd21-optimum"));
  GenerateRequest r = SmallRequest();
  r.scheduler = "euler_a";
  r.steps = 3;
  auto a = p.Generate(r);
  auto b = p.Generate(r);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString();
  EXPECT_EQ(a->images[0].png, b->images[0].png);
}

// Ancestral noise drawn on the workspace's worker thread while the UNet runs gives exactly the
// bits of serial drawing: two images (two generators, one chunk each), fp32 and fp16 UNets, and
// also when Prepare is repeated before Finish (the stream must not advance twice).
TEST(SdPipelineTest, PrefetchedAncestralNoiseIsBitIdenticalToSerialDrawing) {
  for (const std::string variant : {"sd15-legacy", "sd15-optimum-fp16"}) {
    const SdModel& m = Model(variant);
    auto run = [&](bool prefetch, bool repeat_prepare) {
      auto sched = CreateScheduler("euler_a", m.scheduler_config);
      EXPECT_TRUE(sched.ok() && (*sched)->SetTimesteps(4).ok());
      std::vector<Rng> rngs;
      std::vector<float> latents;
      for (std::uint64_t k = 0; k < 2; ++k) {
        rngs.push_back(*Rng::Create(RngMode::kNumpy, 11 + k));
        auto z = InitialNoise(RngMode::kNumpy, 1 + k, 32, 32);
        for (float v : *z) latents.push_back(v * static_cast<float>((*sched)->init_noise_sigma()));
      }
      StepWorkspace ws(m.unet, 2, true, 7.5f, 32, 32, std::span<Rng>(rngs), prefetch);
      ws.inputs().push_back({m.unet.context_name,
                             runtime::Tensor(m.unet.context_dtype, {4, 77, m.unet.context_size})});
      std::vector<runtime::Tensor> out;
      for (int i = 0; i < (*sched)->num_steps(); ++i) {
        ws.Prepare(**sched, i, latents);
        if (repeat_prepare) ws.Prepare(**sched, i, latents);
        EXPECT_TRUE(m.unet.session.Run(ws.inputs(), {m.unet.output_name}, &out).ok());
        auto st = ws.Finish(**sched, i, out[0], &latents);
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
      return latents;
    };
    const std::vector<float> serial = run(false, false);
    for (bool repeat : {false, true}) {
      const std::vector<float> threaded = run(true, repeat);
      ASSERT_EQ(serial.size(), threaded.size());
      EXPECT_EQ(std::memcmp(serial.data(), threaded.data(), serial.size() * sizeof(float)), 0)
          << variant << (repeat ? " (Prepare repeated)" : "");
    }
  }
}

TEST(SdPipelineTest, NegativePromptAndGuidanceChangeTheImage) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  auto base = p.Generate(r);
  r.negative_prompt = "blurry, low quality";
  auto neg = p.Generate(r);
  r.negative_prompt.reset();
  r.guidance = 1.0;  // no classifier-free guidance: UNet batch of 1
  auto nog = p.Generate(r);
  ASSERT_TRUE(base.ok() && neg.ok() && nog.ok());
  EXPECT_NE(base->images[0].png, neg->images[0].png);
  EXPECT_NE(base->images[0].png, nog->images[0].png);
  EXPECT_DOUBLE_EQ(nog->guidance, 1.0);
  // SD 1.x encodes "" for no negative prompt (as diffusers does): absent and "" agree here.
  r.guidance.reset();
  r.negative_prompt = "";
  auto empty = p.Generate(r);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(base->images[0].image.pixels, empty->images[0].image.pixels);  // the text differs
}

// diffusers' and Optimum's SDXL pipelines use zero embeddings as the unconditional input only when
// the negative prompt is absent (force_zeros_for_empty_prompt); an explicit "" is encoded. The
// final latents follow the UNet conditioning: equal conditioning gives equal latents.
TEST(SdPipelineTest, SdxlEncodesAnEmptyNegativePromptAndZeroesOnlyAnAbsentOne) {
  const SdModel& m = Model("sdxl-optimum");
  ASSERT_TRUE(m.force_zeros_for_empty_prompt);
  Pipeline p(m);
  auto latents = [&](std::optional<std::string> negative) {
    GenerateRequest r = SmallRequest();
    r.negative_prompt = std::move(negative);
    std::vector<float> last;
    auto out = p.Generate(r, [&](const StepProgress& s) {
      if (s.latents != nullptr) {
        last.assign(s.latents, s.latents + 4 * s.latent_height * s.latent_width);
      }
      return true;
    });
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_FALSE(last.empty());
    return last;
  };
  const std::vector<float> absent = latents(std::nullopt);
  const std::vector<float> empty = latents("");
  const std::vector<float> text = latents("blurry");
  EXPECT_NE(absent, empty) << "\"\" must be encoded, not zeroed like an absent negative prompt";
  EXPECT_NE(empty, text);
  EXPECT_EQ(absent, latents(std::nullopt));  // deterministic: the difference is the conditioning
}

TEST(SdPipelineTest, InfotextLeavesOutANegativePromptThatGuidanceIgnored) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.negative_prompt = "blurry";
  r.guidance = 1.0;
  auto out = p.Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->images[0].parameters.find("Negative prompt"), std::string::npos)
      << out->images[0].parameters;
  r.guidance = 1.5;
  r.negative_prompt = "";
  out = p.Generate(r);
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->images[0].parameters.find("\nNegative prompt: \n"), std::string::npos)
      << out->images[0].parameters;
}

TEST(SdPipelineTest, Full512ImageAt20Steps) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.width = r.height = 512;
  r.steps = 20;
  auto out = p.Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto png = DecodePng(out->images[0].png, "512");
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(png->width, 512);
  EXPECT_EQ(png->height, 512);
  EXPECT_EQ(out->timings.unet_ms.size(), 21u);
}

TEST(SdPipelineTest, CancellationStopsBetweenSteps) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.steps = 5;
  auto out = p.Generate(r, [](const StepProgress& s) { return s.step < 2; });
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cancelled);
  EXPECT_EQ(out->steps_done, 2);
  EXPECT_TRUE(out->images.empty());
  std::atomic<bool> flag{true};
  auto out2 = p.Generate(r, nullptr, &flag);
  ASSERT_TRUE(out2.ok());
  EXPECT_TRUE(out2->cancelled);
  EXPECT_EQ(out2->steps_done, 0);
}

// ------------------------------------------------------------------------------------------
// Bad input: each case must name what is wrong.

void ExpectError(const common::Status& s, StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message '" << s.message() << "' should mention '" << needle << "'";
}

TEST(SdBadInputTest, RequestFieldsOutOfRange) {
  Pipeline p(Model("sd15-legacy"));
  auto with = [&](auto mutate) {
    GenerateRequest r = SmallRequest();
    mutate(r);
    auto out = p.Generate(r);
    return out.ok() ? common::Status::Ok() : out.status();
  };
  ExpectError(with([](auto& r) { r.width = 500; }), StatusCode::kInvalidArg, "width 500");
  ExpectError(with([](auto& r) { r.height = 2056; }), StatusCode::kInvalidArg,
              "height 2056 is out of range: a multiple of 8 in 256..2048 is required");
  ExpectError(with([](auto& r) { r.width = 248; }), StatusCode::kInvalidArg,
              "width 248 is out of range");
  ExpectError(with([](auto& r) { r.width = 1001; }), StatusCode::kInvalidArg,
              "width 1001 is not a multiple of 8");
  ExpectError(with([](auto& r) { r.steps = 0; }), StatusCode::kInvalidArg, "steps 0");
  ExpectError(with([](auto& r) { r.steps = 10000; }), StatusCode::kInvalidArg, "steps 10000");
  ExpectError(with([](auto& r) { r.batch = 9; }), StatusCode::kInvalidArg, "batch 9");
  ExpectError(with([](auto& r) { r.guidance = std::nan(""); }), StatusCode::kInvalidArg,
              "guidance");
  ExpectError(with([](auto& r) { r.prompt.assign(10u << 20, 'a'); }), StatusCode::kInvalidArg,
              "prompt is 10485760 bytes");
  ExpectError(with([](auto& r) { r.scheduler = "warp_drive"; }), StatusCode::kInvalidArg,
              "warp_drive");
  // The error states every generator's range; image k's seed is the first + k.
  ExpectError(with([](auto& r) { r.seed = 1ull << 33; }), StatusCode::kInvalidArg,
              "seed 8589934592 is out of range for --rng numpy: required 0..4294967295 (2^32-1) "
              "with --rng numpy (numpy.random.RandomState, the default), 0..18446744073709551615 "
              "(2^64-1) with --rng philox");
  ExpectError(with([](auto& r) {
                r.seed = 4294967295u;
                r.batch = 2;
              }),
              StatusCode::kInvalidArg,
              "seed 4294967296 (image 1's: the first seed + 1) is out of range for --rng numpy");
  EXPECT_TRUE(with([](auto& r) {
                r.seed = 1ull << 33;
                r.rng = RngMode::kPhilox;
              }).ok());
  ExpectError(with([](auto& r) { r.seeds = {1, 2}; }), StatusCode::kInvalidArg, "2 seeds");
}

TEST(SdBadInputTest, AnyMultipleOf8From256To2048IsAccepted) {
  for (auto [w, h] :
       {std::pair{1216, 832}, {832, 1216}, {2048, 2048}, {256, 256}, {1024, 1032}, {264, 2040}}) {
    GenerateRequest r = SmallRequest();
    r.width = w;
    r.height = h;
    EXPECT_TRUE(ValidateRequestBasics(r).ok()) << w << "x" << h;
    EXPECT_TRUE(CheckSide("width", w).ok());
  }
  for (int bad : {0, 8, 248, 2056, 4096, 1020, -8}) {
    EXPECT_FALSE(CheckSide("width", bad).ok()) << bad;
  }
}

TEST(SdPipelineTest, ImagesCarryTheirInfotextAndLongPromptsWarn) {
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest r = SmallRequest();
  r.negative_prompt = "blurry";
  r.model_hash = "abcdef0123";
  r.seed = 9;
  r.batch = 2;
  auto out = p.Generate(r);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->warnings.empty());
  ASSERT_EQ(out->images.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    auto text = ReadPngText(out->images[k].png, "mem");
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    ASSERT_EQ(text->size(), 1u);
    EXPECT_EQ((*text)[0].text, out->images[k].parameters);
    auto params = ParseInfotext(out->images[k].parameters);
    ASSERT_TRUE(params.ok()) << params.status().ToString();
    EXPECT_EQ(params->prompt, r.prompt);
    EXPECT_EQ(params->negative_prompt, std::optional<std::string>("blurry"));
    EXPECT_EQ(params->seed, 9u + k);  // each image its own seed
    EXPECT_EQ(params->steps, r.steps);
    EXPECT_EQ(params->sampler, A1111SamplerName(out->scheduler));
    EXPECT_EQ(params->model_hash, "abcdef0123");
  }
  r.batch = 1;
  r.prompt.clear();
  for (int i = 0; i < 80; ++i) r.prompt += "dog ";
  auto longer = p.Generate(r);
  ASSERT_TRUE(longer.ok()) << longer.status().ToString();
  ASSERT_EQ(longer->warnings.size(), 1u);
  EXPECT_NE(longer->warnings[0].find("prompt is longer than the text encoder's 77 tokens: the last "
                                     "5 tokens were dropped"),
            std::string::npos)
      << longer->warnings[0];
}

// A writable copy of a tiny pipeline to break.
std::string CopyVariant(const tg::testing::TempDir& tmp, const std::string& variant) {
  const std::string dst = tmp / variant;
  fs::copy(TinyDir(variant), dst, fs::copy_options::recursive);
  return dst;
}

TEST(SdBadInputTest, MissingFolderAndFiles) {
  ExpectError(LoadSdModel("/nonexistent/sd", Factory()).status(), StatusCode::kNotFound,
              "/nonexistent/sd");
  tg::testing::TempDir tmp;
  const std::string dir = CopyVariant(tmp, "sd15-optimum");
  fs::remove(dir + "/unet/model.onnx");
  ExpectError(LoadSdModel(dir, Factory()).status(), StatusCode::kNotFound, "unet/model.onnx");
  fs::remove_all(dir + "/vae_decoder");
  ExpectError(LoadSdModel(dir, Factory()).status(), StatusCode::kNotFound, "vae_decoder");
  fs::remove(dir + "/model_index.json");
  ExpectError(LoadSdModel(dir, Factory()).status(), StatusCode::kNotFound, "model_index.json");
}

TEST(SdBadInputTest, MissingExternalWeightsAreNamed) {
  tg::testing::TempDir tmp;
  const std::string dir = CopyVariant(tmp, "sd15-legacy");
  fs::remove(dir + "/unet/weights.pb");
  auto m = LoadSdModel(dir, Factory());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArg) << m.status().ToString();
  EXPECT_NE(m.status().message().find("unet/model.onnx"), std::string::npos)
      << m.status().message();
}

TEST(SdBadInputTest, CorruptOnnxFileIsNamed) {
  tg::testing::TempDir tmp;
  const std::string dir = CopyVariant(tmp, "sd15-optimum");
  tg::testing::WriteFile(dir + "/text_encoder/model.onnx", std::string(4096, '\x7f') + "junk");
  auto m = LoadSdModel(dir, Factory());
  ExpectError(m.status(), StatusCode::kInvalidArg, "text_encoder/model.onnx");
}

TEST(SdBadInputTest, MismatchedShapesAreNamed) {
  auto m = LoadSdModel(TinyDir("bad-shape-mismatch"), Factory());
  ExpectError(m.status(), StatusCode::kInvalidArg, "mismatched shapes");
  EXPECT_NE(m.status().message().find("is 64 but"), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("is 96"), std::string::npos) << m.status().message();
}

TEST(SdBadInputTest, MalformedJsonIsNamed) {
  tg::testing::TempDir tmp;
  const std::string dir = CopyVariant(tmp, "sd15-optimum");
  tg::testing::WriteFile(dir + "/vae_decoder/config.json", "{\"scaling_factor\": \"big\"}");
  ExpectError(LoadSdModel(dir, Factory()).status(), StatusCode::kInvalidArg, "scaling_factor");
  tg::testing::WriteFile(dir + "/model_index.json", "{ not json");
  ExpectError(LoadSdModel(dir, Factory()).status(), StatusCode::kInvalidArg, "model_index.json");
}

// ------------------------------------------------------------------------------------------
// Several requests in one UNet batch (the server's SD batching).

// Three requests of one batch key: two prompts, its own negative prompt, n and seeds each, and a
// repeated prompt (encoded once). Each image must be byte-identical to its request run alone.
std::vector<GenerateRequest> ThreeRequests(const std::string& scheduler) {
  std::vector<GenerateRequest> v(3, SmallRequest());
  for (auto& r : v) {
    r.scheduler = scheduler;
    r.steps = 3;
  }
  v[0].negative_prompt = "blurry";
  v[0].batch = 2;
  v[0].seed = 3;
  v[1].prompt = "a red bicycle leaning on a wall";
  v[1].seed = 11;
  v[2].seeds = {3};  // same seed and prompt as v[0]'s first image, other negative prompt
  return v;
}

void ExpectBatchEqualsAlone(const std::string& variant, const std::string& scheduler) {
  SCOPED_TRACE(variant + " " + scheduler);
  Pipeline p(Model(variant));
  const std::vector<GenerateRequest> reqs = ThreeRequests(scheduler);
  auto batch = p.GenerateBatch(reqs);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->size(), reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto alone = p.Generate(reqs[i]);
    ASSERT_TRUE(alone.ok()) << alone.status().ToString();
    const GenerateOutput& b = (*batch)[i];
    EXPECT_FALSE(b.cancelled);
    EXPECT_EQ(b.steps_done, alone->steps_done);
    ASSERT_EQ(b.images.size(), static_cast<std::size_t>(reqs[i].batch));
    ASSERT_EQ(alone->images.size(), b.images.size());
    for (std::size_t k = 0; k < b.images.size(); ++k) {
      EXPECT_EQ(b.images[k].seed, alone->images[k].seed);
      EXPECT_TRUE(b.images[k].png == alone->images[k].png)
          << "request " << i << " image " << k << ": batched PNG differs from the request alone";
      EXPECT_EQ(b.images[k].parameters, alone->images[k].parameters);
    }
  }
  // The batch is not trivially equal: different prompts/negatives give different images.
  EXPECT_NE((*batch)[0].images[0].png, (*batch)[2].images[0].png);
  EXPECT_NE((*batch)[0].images[0].png, (*batch)[1].images[0].png);
}

TEST(SdBatchTest, BatchedRequestsAreByteIdenticalToEachRunAlone) {
  ExpectBatchEqualsAlone("sd15-legacy", "");             // PNDM: history across the batch
  ExpectBatchEqualsAlone("sd21-optimum", "euler_a");     // ancestral noise per image
  ExpectBatchEqualsAlone("sdxl-optimum", "dpmpp_2m");    // two encoders, zero negative
  ExpectBatchEqualsAlone("sd15-optimum-fp16", "euler");  // fp16 UNet
}

TEST(SdBatchTest, KeysSeparateWhatCannotShareAUnetBatch) {
  const GenerateRequest a = SmallRequest();
  GenerateRequest b = a;
  EXPECT_EQ(BatchKey(a), BatchKey(b));
  b.prompt = "another prompt";
  b.negative_prompt = "x";
  b.seed = 99;
  b.batch = 3;
  EXPECT_EQ(BatchKey(a), BatchKey(b)) << "prompt, negative prompt, seed and n may differ";
  for (auto change : std::vector<std::function<void(GenerateRequest&)>>{
           [](auto& r) { r.steps = 3; }, [](auto& r) { r.width = 320; },
           [](auto& r) { r.height = 320; }, [](auto& r) { r.scheduler = "euler"; },
           [](auto& r) { r.guidance = 7.0; }, [](auto& r) { r.rng = RngMode::kPhilox; }}) {
    GenerateRequest c = a;
    change(c);
    EXPECT_NE(BatchKey(a), BatchKey(c));
  }
  Pipeline p(Model("sd15-legacy"));
  GenerateRequest other = a;
  other.steps = 3;
  ExpectError(p.GenerateBatch({a, other}).status(), StatusCode::kInvalidArg,
              "cannot share a UNet batch");
  GenerateRequest big = a;
  big.batch = kMaxBatch;
  ExpectError(p.GenerateBatch({big, a}).status(), StatusCode::kInvalidArg,
              "at most " + std::to_string(kMaxBatch));
  GenerateRequest bad = a;
  bad.steps = 0;
  ExpectError(p.GenerateBatch({a, bad}).status(), StatusCode::kInvalidArg, "request 1");
  ExpectError(p.GenerateBatch({}).status(), StatusCode::kInvalidArg, "at least one");
}

TEST(SdBatchTest, ACancelledRequestLeavesTheOthersUnchanged) {
  Pipeline p(Model("sd15-legacy"));
  std::vector<GenerateRequest> reqs = ThreeRequests("");
  reqs[1].steps = reqs[2].steps = reqs[0].steps = 4;
  std::atomic<bool> stop1{false};
  const std::atomic<bool>* flags[] = {nullptr, &stop1, nullptr};
  auto out = p.GenerateBatch(
      reqs,
      [&](const StepProgress& s) {
        if (s.step == 2) stop1 = true;  // request 1's deadline passes after step 2
        return true;
      },
      flags);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE((*out)[1].cancelled);
  EXPECT_EQ((*out)[1].steps_done, 2);
  EXPECT_TRUE((*out)[1].images.empty());
  for (std::size_t i : {0u, 2u}) {
    auto alone = p.Generate(reqs[i]);
    ASSERT_TRUE(alone.ok());
    EXPECT_FALSE((*out)[i].cancelled);
    EXPECT_EQ((*out)[i].steps_done, 5);  // PNDM: steps + 1 UNet calls
    ASSERT_EQ((*out)[i].images.size(), alone->images.size());
    EXPECT_EQ((*out)[i].images[0].png, alone->images[0].png);
  }
  // Every request cancelled: the loop stops.
  std::atomic<bool> all{true};
  const std::atomic<bool>* all_flags[] = {&all, &all, &all};
  auto none = p.GenerateBatch(reqs, nullptr, all_flags);
  ASSERT_TRUE(none.ok());
  for (const auto& o : *none) {
    EXPECT_TRUE(o.cancelled);
    EXPECT_EQ(o.steps_done, 0);
    EXPECT_EQ(o.timings.unet_ms.size(), 0u);
  }
}

}  // namespace
}  // namespace tg::sd
