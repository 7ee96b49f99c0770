# kiln's two commands: `make demo` runs the main job, `make test` runs every test.
# Both install what is missing first (scripts/install_deps.sh) and build with CMake and Ninja.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)

.PHONY: all deps build demo test test-cpp test-python test-notebooks format-check clean

all: build

deps:
	./scripts/install_deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j $(JOBS)
	./scripts/install_python_package.sh

demo: build
	python3 examples/demo.py

test: build
	$(MAKE) --no-print-directory format-check test-cpp test-python test-notebooks

test-cpp:
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

test-python:
	cd tests/python && python3 -m pytest -q -x -p no:cacheprovider

test-notebooks:
	python3 scripts/run_notebooks.py tutorials

format-check:
	./scripts/check_format.sh

clean:
	rm -rf $(BUILD_DIR)
