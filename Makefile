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

# truegreen's own runtime image, built without a Docker daemon (buildah, or umoci as fallback).
image: build
	@bash scripts/build_image.sh --binary build/bin/truegreen --out build/image/truegreen.tar

# Our own deploy/ must pass our own audits: image size budget and rules, Dockerfile, manifests.
audit-deploy: image
	@build/bin/truegreen audit image build/image/truegreen.tar --budget 2GiB
	@build/bin/truegreen audit dockerfile deploy/Dockerfile --context .
	@build/bin/truegreen audit k8s deploy/k8s --matrix deploy/matrix.production.yaml

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
