# kprof: build and install.
#
#   make install PREFIX=$HOME/.local      # builds (cargo build --release) and installs
#   make test                             # the tests: the same as bash tests/test.sh
#
# installs  PREFIX/bin/kprof
#           PREFIX/lib/libkprof_core.so, libkprof.so, libkprof_ompt.so, ... (those built)
#           PREFIX/include/kprof/kprof.h, kprof.hpp, kprof.f90, kprof_actor.h, kprof_actor_wrap.c
#           PREFIX/lib/cmake/kprof/kprofConfig.cmake, kprofConfigVersion.cmake
#           PREFIX/lib/pkgconfig/kprof.pc
#           PREFIX/share/modulefiles/kprof/VERSION.lua (Lmod), VERSION (Environment Modules)
# DESTDIR is honoured (staged installs); CARGO_TARGET_DIR too. `make uninstall` removes
# exactly those files.

PREFIX ?= /usr/local
DESTDIR ?=
CARGO ?= cargo
TARGET_DIR ?= $(if $(CARGO_TARGET_DIR),$(CARGO_TARGET_DIR),target)
RELEASE := $(TARGET_DIR)/release
VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)

# PLUGINS and the packages built are the model table's (tables/src/models.rs):
# tests/tests/tables.rs fails when they disagree.
PLUGINS := libkprof_core.so libkprof.so libkprof_ompt.so libkprof_acc.so libkprof_raja.so libkprof_cuda.so libkprof_rocm.so libkprof_mpi.so libkprof_actor.so libkprof_signals.so
HEADERS := ffi-headers/kprof.h ffi-headers/kprof.hpp ffi-headers/kprof.f90 ffi-headers/kprof_actor.h ffi-headers/kprof_actor_wrap.c

D := $(DESTDIR)$(PREFIX)

.PHONY: all build install uninstall test
all: build

build:
	$(CARGO) build --release -p kprof-core -p kprof-signals -p kprof-kokkos -p kprof-ompt -p kprof-openacc -p kprof-raja -p kprof-cuda -p kprof-rocm -p kprof-mpi -p kprof-actor -p kprof-cli

test:
	bash tests/test.sh

install: build
	install -d "$(D)/bin" "$(D)/lib/cmake/kprof" "$(D)/lib/pkgconfig" "$(D)/include/kprof" "$(D)/share/modulefiles/kprof"
	install -m 755 "$(RELEASE)/kprof" "$(D)/bin/kprof"
	for lib in $(PLUGINS); do \
	    if [ -f "$(RELEASE)/$$lib" ]; then install -m 755 "$(RELEASE)/$$lib" "$(D)/lib/$$lib" || exit 1; fi; \
	done
	install -m 644 $(HEADERS) "$(D)/include/kprof/"
	sed -e 's|@KPROF_VERSION@|$(VERSION)|g' cmake/kprofConfig.cmake.in > "$(D)/lib/cmake/kprof/kprofConfig.cmake"
	sed -e 's|@KPROF_VERSION@|$(VERSION)|g' cmake/kprofConfigVersion.cmake.in > "$(D)/lib/cmake/kprof/kprofConfigVersion.cmake"
	sed -e 's|@KPROF_VERSION@|$(VERSION)|g' -e 's|@PREFIX@|$(PREFIX)|g' cmake/kprof.pc.in > "$(D)/lib/pkgconfig/kprof.pc"
	sed -e 's|@KPROF_VERSION@|$(VERSION)|g' -e 's|@PREFIX@|$(PREFIX)|g' modulefiles/kprof.lua.in > "$(D)/share/modulefiles/kprof/$(VERSION).lua"
	sed -e 's|@KPROF_VERSION@|$(VERSION)|g' -e 's|@PREFIX@|$(PREFIX)|g' modulefiles/kprof.tcl.in > "$(D)/share/modulefiles/kprof/$(VERSION)"
	@echo "kprof $(VERSION) installed in $(D)"

uninstall:
	rm -f "$(D)/bin/kprof" $(addprefix "$(D)/lib/,$(addsuffix ",$(PLUGINS))) \
	    "$(D)/include/kprof/kprof.h" "$(D)/include/kprof/kprof.hpp" "$(D)/include/kprof/kprof.f90" \
	    "$(D)/include/kprof/kprof_actor.h" "$(D)/include/kprof/kprof_actor_wrap.c" \
	    "$(D)/lib/cmake/kprof/kprofConfig.cmake" "$(D)/lib/cmake/kprof/kprofConfigVersion.cmake" \
	    "$(D)/lib/pkgconfig/kprof.pc" \
	    "$(D)/share/modulefiles/kprof/$(VERSION).lua" "$(D)/share/modulefiles/kprof/$(VERSION)"
	-rmdir "$(D)/include/kprof" "$(D)/lib/cmake/kprof" "$(D)/share/modulefiles/kprof" 2>/dev/null
