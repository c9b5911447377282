# truegreen: the two commands a user needs are `make demo` and `make test`; both set up a fresh
# Debian 12 machine themselves (scripts/setup.sh is idempotent and cheap on a second run).
SHELL := /bin/bash
JOBS ?= $(shell nproc)
# Let ccache reuse objects between checkouts in different folders (see CMakeLists.txt).
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all setup build build-asan test test-release test-asan fuzz format-check demo bench soak clean \
	image audit-deploy

all: build

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

build-asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

test-release: build
	@ctest --preset release

test-asan: build-asan
	@ctest --preset asan

fuzz: setup
	@bash scripts/fuzz.sh

format-check:
	@bash scripts/format_check.sh

# truegreen's own runtime image, built without a Docker daemon (buildah, or umoci as fallback),
# smoke-tested in its root filesystem: doctor with the deployment's matrix and serve on the small
# SD 1.5 pipeline (scripts/image_smoke.sh). TENSORRT_DIR=<a TensorRT 10 install> ships TensorRT
# and its provider; the image is then judged by deploy/matrix.production-tensorrt.yaml.
TENSORRT_DIR ?=
IMAGE_MATRIX := $(if $(TENSORRT_DIR),deploy/matrix.production-tensorrt.yaml,deploy/matrix.production.yaml)
image: build
	@bash scripts/build_image.sh --binary build/bin/truegreen --out build/image/truegreen.tar \
	  $(if $(TENSORRT_DIR),--tensorrt-dir $(TENSORRT_DIR)) --smoke-matrix $(IMAGE_MATRIX) \
	  --smoke-pipeline build/models/sd-tiny/sd15-legacy

# Our own deploy/ must pass our own audits, as deployed: the image against the matrix deploy/k8s
# mounts (size budget and rules too), the Dockerfile, the manifests (scripts/audit_deploy.sh).
audit-deploy: image
	@bash scripts/audit_deploy.sh --binary build/bin/truegreen --image build/image/truegreen.tar

# The whole suite, in a release build and again under ASan/UBSan, plus short fuzz runs and the
# audit of our own image and deployment.
test: format-check test-release test-asan fuzz audit-deploy
	@echo "make test: all suites passed"

demo: build
	@bash scripts/demo.sh

bench: build
	@bash scripts/bench.sh

# `truegreen serve` under load (SOAK_SECONDS, default 300, at SOAK_CONCURRENCY 16): RSS bounded,
# no response other than 200/429, clean SIGTERM drain (docs/SERVER.md).
soak: build
	@bash scripts/soak_server.sh

clean:
	rm -rf build build-asan build-debug build-fuzz
