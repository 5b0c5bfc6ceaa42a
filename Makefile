# One non-recursive Makefile for the whole tree. Every artefact lands in build/.
#
# Layout conventions the rules below rely on (add a file, not a rule):
#   bpf/*.bpf.c                 -> build/bpf/*.bpf.o and build/*.skel.h (the product's programs)
#   tests/bench/*.bpf.c         -> build/tests/bench/*.bpf.o and build/*.skel.h (a bench's own)
#   metrics/src/*.c             -> build/libebee.a        (the tracing core)
#   metrics/cli/*.c             -> build/ebee             (the CLI)
#   actuators/*.c               -> build/libact.a
#   controller/*.c, policies/*.c-> build/libparties.a, controller/main.c -> build/parties
#   tests/unit/test_*.c         -> build/tests/unit/test_*          (cmocka, no root)
#   tests/experiments/test_*.c  -> build/tests/experiments/test_*   (cmocka, no root: experiments/ code)
#   tests/integration/test_*.c  -> build/tests/integration/test_*   (cmocka, root)
#   tests/fixtures/*.c          -> build/fixtures/*       (servers and clients for tests)
#   experiments/loadgen/*.c     -> build/loadgen          (one program)
#   experiments/workloads/*/    -> build/<dir>            (one program per folder; common/
#                                  is not one: its helpers link into every server)

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= bpftool
BUILD    := build
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS   ?= -O2 -g
VERSION  := 0.1.0
WARN     := -Wall -Wextra -Werror -Wno-unused-parameter
# The layers (README.md, "Layout"): what each folder's files may include, one table. An entry
# is a folder (with everything below it) or one header; BUILD is the generated headers
# (skeletons, vmlinux.h). A file may also include its own folder. Each layer's objects get the
# -I flags of its entries alone, so the compiler cannot find a header across a layer, and
# `make check-layers` (tests/lint/layers.py, run by `make test` and `make unit`) refuses what
# -I cannot stop: a relative path into another layer, or a header of an allowed folder that a
# one-file entry leaves out. Files in no layer (tests/, fixtures) see every public folder.
LAYERS := bpf common metrics/include metrics/src metrics/cli actuators/include actuators \
	  controller controller/policies experiments
MAY_bpf                := bpf BUILD
MAY_common             := common
MAY_metrics/include    := metrics/include
# libebee is installed alone: of common/ only what it compiles in (procfs.c, window.c,
# cgroupfs.c) or what is header-only (opts.h)
MAY_metrics/src        := metrics/src metrics/include common/procfs.h common/window.h \
			  common/cgroupfs.h common/opts.h bpf/ebee_common.h bpf/ebee_dgram.h \
			  bpf/frame BUILD
MAY_metrics/cli        := metrics/cli metrics/include common
MAY_actuators/include  := actuators/include common
MAY_actuators          := actuators/include actuators common
MAY_controller         := controller actuators/include metrics/include common
# policies see an observation and return a decision: the policy interface, nothing else
MAY_controller/policies := controller/policy.h controller/cfg_key.h common/cpulist.h \
			   common/opts.h
MAY_experiments        := experiments common
uniq = $(if $(1),$(firstword $(1)) $(call uniq,$(filter-out $(firstword $(1)),$(1))))
layer_inc = $(addprefix -I,$(call uniq,$(foreach a,$(MAY_$(1)),$(if $(filter BUILD,$(a)),$(BUILD),\
	    $(if $(filter %.h,$(a)),$(patsubst %/,%,$(dir $(a))),$(a))))))
# Outside the layers: tests and fixtures (tests of internals name private headers by path)
LAYER_INC = -Imetrics/include -Iactuators/include -Icontroller -Icommon -Ibpf -I$(BUILD)
$(foreach l,$(LAYERS),$(eval $(BUILD)/obj/$(l)/%.o $(BUILD)/pic/$(l)/%.o: LAYER_INC = $(call layer_inc,$(l))))
CPPFLAGS  = -D_GNU_SOURCE $(LAYER_INC)
DEPFLAGS  = -MMD -MP
# -lstdc++: libebee demangles libgrpc's C++ symbols with __cxa_demangle (metrics/src/grpc_elf.c).
LDLIBS   := -lbpf -lelf -lz -lcgroup -lcpupower -linih -lmicrohttpd -lpthread -lm -lstdc++
TESTLIBS := -lcmocka

# ---------------------------------------------------------------- BPF
# vmlinux.h is generated from the running kernel's BTF; `make vmlinux` regenerates it.
VMLINUX  := $(BUILD)/vmlinux.h
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS    := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
# -mcpu=v2: the HTTP/2 stream table's compare-and-swap (bpf/frame/http2.h's
# ebee_h2_take) is an instruction clang 14 emits from v2 on; kernels have
# run it since 5.12, v2's jumps since 4.14.
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v2 -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Ibpf -I$(BUILD)

$(VMLINUX):
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

.PHONY: vmlinux
vmlinux:
	$(Q)rm -f $(VMLINUX)
	$(Q)$(MAKE) --no-print-directory $(VMLINUX)

# Two steps (clang, then bpftool gen object): -MF/-MT name the final object so a
# header edit rebuilds it and, through it, the skeleton.
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -MF $(@:.o=.d) -MT $@ -c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(Q)rm -f $(@:.o=.tmp.o)

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Benchmarks' own BPF programs (test code, not the product's): built the same way, the
# skeleton beside the product's in build/, found there by the benchmark that includes it.
BENCH_BPF_SRCS := $(wildcard tests/bench/*.bpf.c)
BENCH_SKELS    := $(patsubst tests/bench/%.bpf.c,$(BUILD)/%.skel.h,$(BENCH_BPF_SRCS))
$(BUILD)/tests/bench/%.bpf.o: tests/bench/%.bpf.c $(VMLINUX)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -MF $(@:.o=.d) -MT $@ -c $< -o $(@:.o=.tmp.o)
	$(Q)$(BPFTOOL) gen object $@ $(@:.o=.tmp.o)
	$(Q)rm -f $(@:.o=.tmp.o)

$(BENCH_SKELS): $(BUILD)/%.skel.h: $(BUILD)/tests/bench/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- libraries
# common/procfs.c (processes read from /proc), common/window.c (the request window, which the
# simulator uses too) and common/cgroupfs.c (cgroup mounts and membership) are compiled into
# libebee as well: libebee.a and libebee.so are installed alone, so they cannot lean on
# libcommon.a; the version script keeps them unexported from the .so, and the installed .a is
# sealed the same way ($(LIBEBEE_DIST)). A program built here that links both archives takes
# one copy (the same object).
EBEE_SRCS := $(wildcard metrics/src/*.c metrics/src/frame/*.c) common/procfs.c common/window.c \
	     common/cgroupfs.c
EBEE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(EBEE_SRCS))
ACT_SRCS  := $(wildcard actuators/*.c)
ACT_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(ACT_SRCS))
CTL_SRCS  := $(filter-out controller/main.c,$(wildcard controller/*.c controller/policies/*.c \
	controller/res/*.c))
CTL_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(CTL_SRCS))
# common/: small modules both programs use (Prometheus exposition, HTTP endpoint, /proc)
COMMON_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard common/*.c))

LIBEBEE    := $(BUILD)/libebee.a
LIBACT     := $(BUILD)/libact.a
LIBPARTIES := $(BUILD)/libparties.a
LIBCOMMON  := $(BUILD)/libcommon.a
ALL_LIBS   := $(LIBPARTIES) $(LIBACT) $(LIBEBEE) $(LIBCOMMON)

# Skeletons must exist before anything that may include one compiles: the
# library, and benchmarks that load a BPF object of their own.
BENCH_C_SRCS := $(filter-out %.bpf.c,$(wildcard tests/bench/*.c))
$(EBEE_OBJS): | $(SKELS)
$(patsubst %.c,$(BUILD)/obj/%.o,$(BENCH_C_SRCS)): | $(SKELS) $(BENCH_SKELS)

$(BUILD)/obj/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(DEPFLAGS) -c $< -o $@

# The shared library's objects: position independent, built beside the static ones.
EBEE_PIC_OBJS := $(patsubst %.c,$(BUILD)/pic/%.o,$(EBEE_SRCS))
$(EBEE_PIC_OBJS): | $(SKELS)
$(BUILD)/pic/%.o: %.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC $(WARN) $(DEPFLAGS) -c $< -o $@

# libebee.so.0: the version script exports the ebee.h API and nothing else.
LIBEBEE_SO := $(BUILD)/libebee.so.0
$(LIBEBEE_SO): $(EBEE_PIC_OBJS) metrics/libebee.map
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,libebee.so.0 -Wl,--version-script=metrics/libebee.map \
		-Wl,--no-undefined $(EBEE_PIC_OBJS) -lbpf -lelf -lz -lpthread -lm -lstdc++ -o $@

# The installed libebee.a: every libebee object linked into one (ld -r) whose only global
# symbols are the API that libebee.so exports (libebee.map), so that a program linking it
# statically may have its own procfs_stat() or anything else libebee uses inside. The build's
# own $(LIBEBEE) keeps every symbol, for the tests and programs built here.
LIBEBEE_DIST := $(BUILD)/dist/libebee.a
$(LIBEBEE_DIST): $(EBEE_OBJS) metrics/libebee.map
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sed -n 's/^[[:space:]]*\(ebee_[a-z_0-9]*\);$$/\1/p' metrics/libebee.map >$(@D)/api.syms
	$(Q)ld -r -o $(@D)/libebee.o $(EBEE_OBJS)
	$(Q)objcopy --keep-global-symbols=$(@D)/api.syms $(@D)/libebee.o
	$(Q)rm -f $@
	$(Q)ar rcs $@ $(@D)/libebee.o

$(LIBEBEE): $(EBEE_OBJS)
$(LIBACT): $(ACT_OBJS)
$(LIBPARTIES): $(CTL_OBJS)
$(LIBCOMMON): $(COMMON_OBJS)
$(ALL_LIBS):
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# ---------------------------------------------------------------- programs
EBEE_CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard metrics/cli/*.c))
$(EBEE_CLI_OBJS): CPPFLAGS += -DEBEE_VERSION='"$(VERSION)"'
$(BUILD)/obj/controller/args.o: CPPFLAGS += -DPARTIES_VERSION='"$(VERSION)"'
$(BUILD)/ebee: $(EBEE_CLI_OBJS) $(LIBEBEE) $(LIBCOMMON)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

PARTIES_OBJS := $(BUILD)/obj/controller/main.o
$(BUILD)/parties: $(PARTIES_OBJS) $(ALL_LIBS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -lsystemd -o $@

PROGRAMS := $(BUILD)/ebee
ifneq ($(wildcard controller/main.c),)
PROGRAMS += $(BUILD)/parties
endif

# Helpers of every server, the experiment workloads and the test servers alike (srv_util.h)
SRV_UTIL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard experiments/workloads/common/*.c))

FIXTURE_SRCS := $(wildcard tests/fixtures/*.c)
FIXTURES     := $(patsubst tests/fixtures/%.c,$(BUILD)/fixtures/%,$(FIXTURE_SRCS))
$(BUILD)/fixtures/%: $(BUILD)/obj/tests/fixtures/%.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lpthread -lm $(FIXTURE_LIBS) -o $@
$(BUILD)/fixtures/cpr_server $(BUILD)/fixtures/loop_server: $(SRV_UTIL_OBJS)
# loop_server's io_uring backend (ebee's socket-path tests)
$(BUILD)/fixtures/loop_server: FIXTURE_LIBS := -luring

# gRPC fixtures (C++ on Debian's grpc++): tests/fixtures/grpc/*.proto -> build/gen/ (protoc and
# grpc_cpp_plugin; generated code is never committed), tests/fixtures/grpc/NAME.cc -> build/fixtures/NAME
# linked with every generated file.
CXX         ?= g++
CXXFLAGS    ?= -O2 -g
GRPC_PROTOS := $(wildcard tests/fixtures/grpc/*.proto)
GRPC_GEN    := $(foreach p,$(GRPC_PROTOS:tests/fixtures/grpc/%.proto=%),$(BUILD)/gen/$(p).pb.cc \
	       $(BUILD)/gen/$(p).grpc.pb.cc)
GRPC_GEN_OBJS := $(patsubst $(BUILD)/gen/%.cc,$(BUILD)/obj/gen/%.o,$(GRPC_GEN))
GRPC_FIXTURES := $(patsubst tests/fixtures/grpc/%.cc,$(BUILD)/fixtures/%,$(wildcard tests/fixtures/grpc/*.cc))
GRPC_CXXFLAGS  = $(shell pkg-config --cflags grpc++ protobuf 2>/dev/null) -I$(BUILD)/gen
GRPC_LIBS      = $(shell pkg-config --libs grpc++ protobuf 2>/dev/null) -lpthread

$(BUILD)/gen/%.pb.cc $(BUILD)/gen/%.pb.h $(BUILD)/gen/%.grpc.pb.cc $(BUILD)/gen/%.grpc.pb.h: \
		tests/fixtures/grpc/%.proto
	$(call msg,PROTOC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)protoc -Itests/fixtures/grpc --cpp_out=$(@D) --grpc_out=$(@D) \
		--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) $<

# Generated code is not ours to warn about.
$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.cc
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(GRPC_CXXFLAGS) $(CXXFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/tests/fixtures/grpc/%.o: tests/fixtures/grpc/%.cc | $(GRPC_GEN)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(GRPC_CXXFLAGS) $(CXXFLAGS) $(WARN) $(DEPFLAGS) -c $< -o $@

$(BUILD)/fixtures/%: $(BUILD)/obj/tests/fixtures/grpc/%.o $(GRPC_GEN_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CXXFLAGS) $^ $(GRPC_LIBS) -o $@

# A fake gRPC C-core (tests/fixtures/chttp2/fake_chttp2.cc: the chttp2 functions ebee hooks, under
# their real mangled names) in each shape a C-core gets linked in, for the tests of finding one
# by its symbols: programs with the functions in .symtab alone (PIE and not), one exporting them
# too (-rdynamic: in both tables), the PIE stripped (nowhere), a module not named libgrpc (in
# .dynsym, like Python's grpcio) with the program that loads it, and a module whose
# mark_stream_closed has the wrong arguments.
CHTTP2_SRC      := tests/fixtures/chttp2/fake_chttp2.cc
CHTTP2_FIXTURES := $(addprefix $(BUILD)/fixtures/,fake_chttp2_pie fake_chttp2_exec \
		   fake_chttp2_rdynamic fake_chttp2_stripped fake_cygrpc.so fake_cygrpc_badsig.so \
		   fake_chttp2_host)
CHTTP2_CXX       = $(Q)mkdir -p $(@D) && $(CXX) $(CXXFLAGS) $(WARN)
$(BUILD)/fixtures/fake_chttp2_pie: $(CHTTP2_SRC)
	$(call msg,CXX,$@)
	$(CHTTP2_CXX) -fPIE -pie -DFAKE_CHTTP2_MAIN $< -o $@
$(BUILD)/fixtures/fake_chttp2_exec: $(CHTTP2_SRC)
	$(call msg,CXX,$@)
	$(CHTTP2_CXX) -fno-pie -no-pie -DFAKE_CHTTP2_MAIN $< -o $@
$(BUILD)/fixtures/fake_chttp2_rdynamic: $(CHTTP2_SRC)
	$(call msg,CXX,$@)
	$(CHTTP2_CXX) -fPIE -pie -rdynamic -DFAKE_CHTTP2_MAIN $< -o $@
$(BUILD)/fixtures/fake_chttp2_stripped: $(BUILD)/fixtures/fake_chttp2_pie
	$(call msg,STRIP,$@)
	$(Q)strip -o $@ $<
$(BUILD)/fixtures/fake_cygrpc.so: $(CHTTP2_SRC)
	$(call msg,CXX,$@)
	$(CHTTP2_CXX) -fPIC -shared $< -o $@
$(BUILD)/fixtures/fake_cygrpc_badsig.so: $(CHTTP2_SRC)
	$(call msg,CXX,$@)
	$(CHTTP2_CXX) -fPIC -shared -DFAKE_CHTTP2_BADSIG $< -o $@
$(BUILD)/fixtures/fake_chttp2_host: $(BUILD)/obj/tests/fixtures/chttp2/fake_chttp2_host.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -ldl -o $@

# Go gRPC fixtures (tests/fixtures/gogrpc/NAME.go -> build/fixtures/NAME): Go's own gRPC, not
# C-core, so only ebee's HTTP/2 framer sees its calls (test_ebee_frame_grpc.sh). Built from
# Debian's golang-go and golang-google-grpc-dev in GOPATH mode (/usr/share/gocode): no module
# is ever fetched, and the caches stay in build/. CGO_ENABLED=0 makes them static, so the VM
# lane's guests, which have no Go, run them too. Without go or the packages nothing is built
# and the test says SKIP.
GO          ?= go
GOGRPC_PKG  := /usr/share/gocode/src/google.golang.org/grpc/health/grpc_health_v1
ifneq ($(and $(shell command -v $(GO) 2>/dev/null),$(wildcard $(GOGRPC_PKG))),)
GOGRPC_FIXTURES := $(patsubst tests/fixtures/gogrpc/%.go,$(BUILD)/fixtures/%,\
		   $(wildcard tests/fixtures/gogrpc/*.go))
endif
GO_ENV = GO111MODULE=off GOPATH=/usr/share/gocode:$(abspath $(BUILD))/gopath \
	 GOCACHE=$(abspath $(BUILD))/gocache GOFLAGS= GOENV=off GOPROXY=off CGO_ENABLED=0
$(GOGRPC_FIXTURES): $(BUILD)/fixtures/%: tests/fixtures/gogrpc/%.go
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(GO_ENV) $(GO) build -o $@ $<

LOADGEN_SRCS := $(wildcard experiments/loadgen/*.c)
ifneq ($(LOADGEN_SRCS),)
PROGRAMS += $(BUILD)/loadgen
$(BUILD)/loadgen: $(patsubst %.c,$(BUILD)/obj/%.o,$(LOADGEN_SRCS)) $(LIBCOMMON)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -lpthread -lm -o $@
endif

WORKLOAD_DIRS := $(filter-out experiments/workloads/common,\
		 $(patsubst %/,%,$(dir $(wildcard experiments/workloads/*/*.c))))
WORKLOAD_BINS := $(sort $(foreach d,$(WORKLOAD_DIRS),$(BUILD)/$(notdir $(d))))
PROGRAMS += $(WORKLOAD_BINS)
define workload_rule
$(BUILD)/$(notdir $(1)): $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(1)/*.c)) $(SRV_UTIL_OBJS)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $$(CFLAGS) $$^ -lpthread -lm -o $$@
endef
$(foreach d,$(sort $(WORKLOAD_DIRS)),$(eval $(call workload_rule,$(d))))

# ---------------------------------------------------------------- tests
# Unit tests of the core in tests/unit/, of the experiments' code (load generator, workloads)
# in tests/experiments/; `make unit` and `make asan` run both.
UNIT_SRCS  := $(wildcard tests/unit/test_*.c tests/experiments/test_*.c)
UNIT_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
INTEG_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(INTEG_SRCS))
# Shared test helpers (tests/lib/*.c) link into every test program.
TESTLIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/lib/*.c))

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJS) $(ALL_LIBS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) $(TESTLIBS) -o $@

# Tests of the tracing core link libebee.a alone, so they build while other
# modules are mid-change (and prove the core has no hidden dependency on them).
EBEE_TEST_BINS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_window*.c \
	tests/unit/test_mode*.c tests/unit/test_kcount*.c tests/unit/test_attach*.c tests/unit/test_cgv2*.c tests/unit/test_kbtf*.c tests/unit/test_frame*.c tests/unit/test_warn*.c tests/integration/test_ebee*.c tests/bench/bench_window*.c \
	tests/bench/bench_ebee*.c))
$(EBEE_TEST_BINS): $(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTLIB_OBJS) $(LIBEBEE)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lbpf -lelf -lz -lpthread -lm -lstdc++ $(TESTLIBS) -o $@

BENCH_SRCS := $(filter-out %.bpf.c,$(wildcard tests/bench/bench_*.c))
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/tests/bench/%,$(BENCH_SRCS))

# ---------------------------------------------------------------- install
# make install [PREFIX=/usr/local] [DESTDIR=...]; configs go to $(SYSCONFDIR)/parties.
PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
COMPDIR    ?= $(PREFIX)/share/bash-completion/completions

SUBST = sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' \
	    -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'
# Generated files depend on the install paths: rebuild them when these change.
$(BUILD)/paths: FORCE
	$(Q)mkdir -p $(@D)
	$(Q)echo '$(VERSION) $(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(SBINDIR) $(SYSCONFDIR)' | cmp -s - $@ || \
		echo '$(VERSION) $(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(SBINDIR) $(SYSCONFDIR)' > $@
$(BUILD)/ebee.pc: metrics/ebee.pc.in $(BUILD)/paths
	$(Q)$(SUBST) $< > $@
$(BUILD)/parties.service: systemd/parties.service.in $(BUILD)/paths
	$(Q)$(SUBST) $< > $@
$(BUILD)/man/%.8: man/%.8.in $(BUILD)/paths
	$(Q)mkdir -p $(@D)
	$(Q)$(SUBST) $< > $@
# ebee(8) names the framers from their one list (EBEE_FRAME_LIST, bpf/frame/frame.h).
$(BUILD)/man/ebee.8: man/ebee.8.in bpf/frame/frame.h $(BUILD)/paths
	$(Q)mkdir -p $(@D)
	$(Q)n=$$(printf '#include "frame/frame.h"\n#define N(ID, stem, name, kind) name\n@ EBEE_FRAME_LIST(N)\n' | \
		$(CC) -E -P -Ibpf -x c - | sed -n 's/^@ //p' | tr -d '"' | xargs | sed 's/ /, /g') && \
		$(SUBST) -e "s|@FRAMINGS@|$$n|g" $< > $@
# parties.ini(5) is generated from the annotated example, so the two cannot disagree.
$(BUILD)/man/parties.ini.5: configs/example.ini man/ini2man.py $(BUILD)/paths
	$(Q)mkdir -p $(@D)
	$(Q)python3 man/ini2man.py $< $(VERSION) > $@
DIST_FILES := $(BUILD)/ebee.pc $(BUILD)/parties.service $(BUILD)/man/ebee.8 \
	      $(BUILD)/man/parties.8 $(BUILD)/man/parties.ini.5

# Every installed path, relative to DESTDIR, so uninstall removes exactly these.
INSTALLED := $(SBINDIR)/ebee $(SBINDIR)/parties $(LIBDIR)/libebee.so.0 $(LIBDIR)/libebee.so \
	$(LIBDIR)/libebee.a $(INCLUDEDIR)/ebee.h $(LIBDIR)/pkgconfig/ebee.pc \
	$(SYSCONFDIR)/parties/example.ini $(UNITDIR)/parties.service $(MANDIR)/man8/ebee.8 \
	$(MANDIR)/man8/parties.8 $(MANDIR)/man5/parties.ini.5 $(COMPDIR)/ebee $(COMPDIR)/parties

.PHONY: install uninstall FORCE
FORCE:
install: $(BUILD)/ebee $(BUILD)/parties $(LIBEBEE_SO) $(LIBEBEE_DIST) $(DIST_FILES)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 755 $(BUILD)/ebee $(DESTDIR)$(SBINDIR)/ebee
	$(Q)install -D -m 755 $(BUILD)/parties $(DESTDIR)$(SBINDIR)/parties
	$(Q)install -D -m 755 $(LIBEBEE_SO) $(DESTDIR)$(LIBDIR)/libebee.so.0
	$(Q)ln -sf libebee.so.0 $(DESTDIR)$(LIBDIR)/libebee.so
	$(Q)install -D -m 644 $(LIBEBEE_DIST) $(DESTDIR)$(LIBDIR)/libebee.a
	$(Q)install -D -m 644 metrics/include/ebee.h $(DESTDIR)$(INCLUDEDIR)/ebee.h
	$(Q)install -D -m 644 $(BUILD)/ebee.pc $(DESTDIR)$(LIBDIR)/pkgconfig/ebee.pc
	$(Q)install -D -m 644 configs/example.ini $(DESTDIR)$(SYSCONFDIR)/parties/example.ini
	$(Q)install -D -m 644 $(BUILD)/parties.service $(DESTDIR)$(UNITDIR)/parties.service
	$(Q)install -D -m 644 $(BUILD)/man/ebee.8 $(DESTDIR)$(MANDIR)/man8/ebee.8
	$(Q)install -D -m 644 $(BUILD)/man/parties.8 $(DESTDIR)$(MANDIR)/man8/parties.8
	$(Q)install -D -m 644 $(BUILD)/man/parties.ini.5 $(DESTDIR)$(MANDIR)/man5/parties.ini.5
	$(Q)install -D -m 644 completion/ebee.bash $(DESTDIR)$(COMPDIR)/ebee
	$(Q)install -D -m 644 completion/parties.bash $(DESTDIR)$(COMPDIR)/parties
	@echo '  (parties.service reads $(SYSCONFDIR)/parties/parties.ini: copy example.ini there and edit it)'

# Removes what install put there, then the directories it leaves empty (never others').
uninstall:
	$(call msg,UNINST,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)for d in $(sort $(dir $(addprefix $(DESTDIR),$(INSTALLED)))); do \
		while [ "$$d" != "$(DESTDIR)/" ] && [ "$$d" != "/" ] && rmdir "$$d" 2>/dev/null; do \
			d=$$(dirname "$$d")/; \
		done; \
	done

# ---------------------------------------------------------------- targets
.DEFAULT_GOAL := all
.PHONY: all test test-host test-all test-busy vm unit check-layers integration bench demo run deps clean help format figure11-sim policy-bench figure11-claim

all: $(PROGRAMS) $(FIXTURES) $(GRPC_FIXTURES) $(GOGRPC_FIXTURES) $(CHTTP2_FIXTURES) $(LIBEBEE_SO) $(LIBEBEE_DIST) $(DIST_FILES)

tests-build: all $(UNIT_BINS) $(INTEG_BINS) $(BENCH_BINS)

# `make test` is what CI runs: the sanitizer pass (`make asan`: unit tests and the config
# fuzz under ASan+UBSan, about half a minute), then every unit and integration test on this
# host and, beside them at the same priority, the VM lane (tests/vm: Debian 12 guests under
# qemu, 6.1 and 6.12, cgroup v2 under systemd, the integration suite inside them), ending with one
# closing line that sums the host and the guests (tests/suite.sh; 22-30 minutes on a
# fresh 2-CPU machine, the guest image built from the mirror included). `make test-host` is
# the host alone, for quick iterations (tests/suite.sh --no-vm); `make vm` the lane alone;
# `make test-all` is `make test`.
test: tests-build check-layers
	$(Q)tests/suite.sh

test-host: tests-build check-layers
	$(Q)tests/suite.sh --no-vm

test-all: test

# The suite on a busy machine: every unit and integration test while one process spins on
# a CPU at normal priority and another writes to disk continuously (tests/busy.sh says
# exactly what load; it dies with the run on every exit path). BUSY_PROFILE=heavy
# (`make test-busy BUSY_PROFILE=heavy`): six CPU-bound processes and the writer.
BUSY_PROFILE ?= light
test-busy: tests-build check-layers
	$(Q)BUSY_PROFILE=$(BUSY_PROFILE) tests/busy.sh tests/run.sh all

vm: tests-build
	$(Q)tests/vm/run.sh

unit: tests-build check-layers
	$(Q)tests/run.sh unit

integration: tests-build
	$(Q)tests/run.sh integration

bench: tests-build
	$(Q)tests/bench/run.sh

# The simulated Figure 11 study (no root): experiments/figure11/sim.sh
figure11-sim: all
	$(Q)experiments/figure11/sim.sh

# Every registered policy over the bench's simulated scenarios (no root; a few minutes):
# experiments/policy-bench/run.sh, niced so it yields to interactive work
policy-bench: $(BUILD)/parties
	$(Q)nice -n 10 experiments/policy-bench/run.sh

# The Figure 11 claim mapped in simulation (no root): experiments/figure11/claim.sh
figure11-claim: $(BUILD)/parties
	$(Q)experiments/figure11/claim.sh

# Sanitizer build: the unit tests and parties with ASan+UBSan (any report is fatal) in
# build/asan, then every unit test, then (as root) the config fuzz against that parties.
# `make test` runs it before the suite; `make asan` alone runs just this.
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	       -fno-sanitize-recover=all
.PHONY: asan asan-build
asan-build: $(UNIT_BINS) $(PROGRAMS)
asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan CFLAGS="$(ASAN_CFLAGS)" asan-build
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		TEST_BUILD=build/asan tests/run.sh unit
	$(Q)if [ "$$(id -u)" -eq 0 ]; then PARTIES=build/asan/parties FUZZ_N=300 \
		tests/integration/test_parties_fuzz.sh; else echo "asan: fuzz skipped (needs root)"; fi

# The include layers (LAYERS and MAY_* above): the tree must pass, and the same check must
# refuse a planted include across a layer, so it is shown able to fail every time it runs.
LAYER_TABLE = $(foreach l,$(LAYERS),'$(l)=$(MAY_$(l))')
check-layers:
	$(Q)python3 tests/lint/layers.py $(BUILD) $(LAYER_TABLE)
	$(Q)python3 tests/lint/layers.py --plant controller/policies/static.c:actuator.h \
		$(BUILD) $(LAYER_TABLE) >/dev/null
	$(Q)python3 tests/lint/layers.py --plant controller/sim_model.c:../metrics/src/mode.h \
		$(BUILD) $(LAYER_TABLE) >/dev/null

demo: all
	$(Q)experiments/demo/run.sh

# Installs the Debian packages the build, tests and experiments need (a no-op when
# present) and mounts tracefs. Root only.
DEB_PKGS := clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev libcgroup-dev libcpupower-dev \
	    libinih-dev libcmocka-dev pkg-config make gcc memcached nginx-light \
	    libmemcached-tools python3 procps iproute2 util-linux libmicrohttpd-dev prometheus \
	    libsystemd-dev systemd man-db bash-completion curl openssl \
	    python3-matplotlib g++ libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev \
	    protobuf-compiler time liburing-dev strace bc dnsmasq-base dnsperf redis-server redis-tools \
	    nghttp2-client python3-grpcio golang-go golang-google-grpc-dev
deps:
	$(Q)missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "deps: installing$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	$(Q)mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
	$(Q)mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

format:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	$(Q)rm -rf $(BUILD)

help:
	@echo 'make [V=1] TARGET'
	@echo '  all          build BPF objects, libebee.a, libact.a, libparties.a, ebee, parties, fixtures'
	@echo '  test         what CI runs: every unit and integration test on this host (root) and, beside them, the VM lane; one summed closing line (~30 min)'
	@echo '  test-host    the host suite alone, no guests (~12 min)'
	@echo '  test-all     the same as test'
	@echo '  test-busy    the host suite under load (tests/busy.sh: one CPU spinning, one disk writer;'
	@echo '               BUSY_PROFILE=heavy: six spinning)'
	@echo '  vm           the VM lane alone: Debian 12 guests (6.1, 6.12) under qemu (root)'
	@echo '  unit         unit tests only (no root)'
	@echo '  check-layers no file includes across a layer it may not (README.md, Layout)'
	@echo '  integration  integration tests only (root, real BPF, servers, cgroups)'
	@echo '  bench        benchmarks: print figures as ratios measured side by side'
	@echo '  asan         ASan+UBSan build (build/asan) of the unit tests and parties; runs them and the config fuzz'
	@echo '  demo         the main job: trace a demo server under load and print the summary'
	@echo '  figure11-sim the Figure 11 study simulated at the paper scale (no root; ~10 min)'
	@echo '  policy-bench every policy over five simulated scenarios, three feeds, 3 seeds: one leaderboard (no root; ~300 s of CPU)'
	@echo '  figure11-claim  the claim mapped: lead time per feed against link, delay, peak, lag (no root; ~19 min CPU)'
	@echo '  install      install programs, libebee.so/.a, ebee.h, ebee.pc, man pages, unit,'
	@echo '               completion (PREFIX=/usr/local, DESTDIR=, SYSCONFDIR=/etc)'
	@echo '  uninstall    remove exactly what install put there'
	@echo '  deps         install missing Debian packages, mount tracefs and bpffs (root)'
	@echo '  vmlinux      regenerate build/vmlinux.h from /sys/kernel/btf/vmlinux'
	@echo '  format       clang-format every C file'
	@echo '  clean        remove build/'

# (build/vm holds the guests' root filesystems: not ours, and full of rc?.d folders)
-include $(shell find $(BUILD) -path $(BUILD)/vm -prune -o -type f -name '*.d' -print 2>/dev/null)
