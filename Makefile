# actionstools: see README.md. The two commands a newcomer needs:
#   make run    install what is missing, build, start the API on 127.0.0.1:8080
#   make test   install what is missing, build, run every test
#
# Builds are out of tree in build/<variant>/: "release" (-O2) and "asan"
# (AddressSanitizer + UndefinedBehaviorSanitizer). V=1 shows the compiler command lines.

VERSION := 0.1.0
BUILD ?= build
CC := gcc
PKGS := libmicrohttpd jansson sqlite3 libcurl openssl uuid

.DEFAULT_GOAL := build
.PHONY: build asan deps run test bench unit unit-release unit-asan api api-sqlite api-dynamodb \
        lambda-package clean format

# Evaluated when a recipe runs, so a first `make test` can install the packages first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS)) -lpthread -lm
TEST_LIBS = $(shell pkg-config --libs cmocka)

WARN := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wstrict-prototypes -Wvla \
        -Wno-unused-parameter -Wno-missing-field-initializers
BASE_CFLAGS = -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc $(WARN) -DAT_VERSION=\"$(VERSION)\" \
              $(PKG_CFLAGS) -MMD -MP

LIB_SRC := $(sort $(filter-out src/main.c,$(shell find src -name '*.c')))
TEST_SRC := $(sort $(shell find tests/unit -name 'test_*.c'))
TEST_SUPPORT_SRC := $(sort $(filter-out $(TEST_SRC),$(shell find tests/unit -name '*.c')))

# GET /docs: the few browser files of the pinned swagger-ui-dist (package.json), copied
# beside each binary into build/<variant>/share/swagger-ui/ when node_modules has them.
# Serving needs none of it: without them /docs says so (docs/api-document.md).
SWAGGER_UI_DIR := node_modules/swagger-ui-dist
SWAGGER_UI_FILES := swagger-ui-bundle.js swagger-ui.css favicon-32x32.png favicon-16x16.png \
                    swagger-ui-bundle.js.LICENSE.txt LICENSE NOTICE
SWAGGER_UI = $(if $(wildcard $(SWAGGER_UI_DIR)/package.json),$(SWAGGER_UI_FILES))

# $(call variant,NAME,EXTRA_CFLAGS,EXTRA_LDFLAGS)
define variant
$(1)_CFLAGS = $$(BASE_CFLAGS) $(2)
$(1)_LDFLAGS := $(3)
$(1)_OBJ := $(patsubst %.c,$(BUILD)/$(1)/%.o,$(LIB_SRC))
$(1)_SUPPORT_OBJ := $(patsubst %.c,$(BUILD)/$(1)/%.o,$(TEST_SUPPORT_SRC))
$(1)_TESTS := $(patsubst %.c,$(BUILD)/$(1)/%,$(TEST_SRC))

$(BUILD)/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	@$(if $(V),,echo "  CC ($(1)) $$<";)$$(CC) $$($(1)_CFLAGS) -c $$< -o $$@

$(BUILD)/$(1)/libactionstools.a: $$($(1)_OBJ)
	@rm -f $$@
	@ar rcs $$@ $$^

$(BUILD)/$(1)/actionstools: $(BUILD)/$(1)/src/main.o $(BUILD)/$(1)/libactionstools.a \
		| $$(addprefix $(BUILD)/$(1)/share/swagger-ui/,$$(SWAGGER_UI))
	@echo "  LD ($(1)) $$@"
	@$$(CC) $$($(1)_CFLAGS) $$^ -o $$@ $$(PKG_LIBS) $$($(1)_LDFLAGS)

$(BUILD)/$(1)/share/swagger-ui/%: $(SWAGGER_UI_DIR)/%
	@mkdir -p $$(@D)
	@cp $$< $$@

$$($(1)_TESTS): $(BUILD)/$(1)/%: $(BUILD)/$(1)/%.o $$($(1)_SUPPORT_OBJ) $(BUILD)/$(1)/libactionstools.a
	@$(if $(V),,echo "  LD ($(1)) $$@";)$$(CC) $$($(1)_CFLAGS) $$^ -o $$@ $$(TEST_LIBS) $$(PKG_LIBS) $$($(1)_LDFLAGS)

-include $$($(1)_OBJ:.o=.d) $$($(1)_SUPPORT_OBJ:.o=.d) $$($(1)_TESTS:=.d) $(BUILD)/$(1)/src/main.d
endef

SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
$(eval $(call variant,release,-O2 -g,))
$(eval $(call variant,asan,-O1 -g $(SAN),$(SAN)))

build: $(BUILD)/release/actionstools
asan: $(BUILD)/asan/actionstools

# Setup (scripts/deps.sh). build-deps: the Debian packages building and serving need
# (apt-get, through sudo when not root); deps: those, the test packages, Node.js >= 20
# and the npm test tools from the committed lockfile. When the machine's Node.js is
# missing or older, scripts/node.sh puts Node.js 20 in $(TOOLS_DIR)/node; every recipe
# finds it first on PATH.
.PHONY: build-deps install uninstall test-install service-check
TOOLS_DIR ?= $(CURDIR)/.tools
export TOOLS_DIR
ifeq ($(filter $(TOOLS_DIR)/node/bin,$(subst :, ,$(PATH))),)
export PATH := $(TOOLS_DIR)/node/bin:$(PATH)
endif

build-deps:
	@./scripts/deps.sh build

deps:
	@./scripts/deps.sh

# Serving needs no Node.js: only the build packages.
run: build-deps
	@$(MAKE) --no-print-directory build
	@./scripts/run.sh

# make install / uninstall: the binary, its man page, the docs, the systemd unit
# actionstools.service and, when there is none yet, the service's environment file
# (the configuration: never overwritten, kept by uninstall once changed). PREFIX,
# DESTDIR and SYSCONFDIR as usual; the unit goes where systemd looks under PREFIX.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/actionstools
# GET /docs finds the Swagger UI files here, relative to the installed binary
# (src/api/docs.c: ../share/actionstools/swagger-ui).
UIDIR = $(PREFIX)/share/actionstools/swagger-ui
UNITDIR ?= $(PREFIX)/lib/systemd/system
ENVFILE = $(SYSCONFDIR)/actionstools/actionstools.env
SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@VERSION@|$(VERSION)|g'
# $(call install_subst,TEMPLATE,DEST): the template with the paths filled in, mode 0644
# (written straight to DEST: installs with other paths may run at the same time).
install_subst = @echo "fill in $(1) > $(2)" && $(SUBST) $(1) >"$(2)" && chmod 0644 "$(2)"

install: $(BUILD)/release/actionstools
	@install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(DOCDIR)" \
		"$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(SYSCONFDIR)/actionstools"
	install -m 0755 $(BUILD)/release/actionstools "$(DESTDIR)$(BINDIR)/actionstools"
	$(call install_subst,packaging/actionstools.1.in,$(DESTDIR)$(MANDIR)/man1/actionstools.1)
	$(call install_subst,packaging/actionstools.service.in,$(DESTDIR)$(UNITDIR)/actionstools.service)
	install -m 0644 README.md "$(DESTDIR)$(DOCDIR)/README.md"
	install -m 0644 packaging/actionstools.env "$(DESTDIR)$(DOCDIR)/actionstools.env.example"
	@if [ -n "$(SWAGGER_UI)" ]; then \
		install -d "$(DESTDIR)$(UIDIR)" && \
		install -m 0644 $(addprefix $(BUILD)/release/share/swagger-ui/,$(SWAGGER_UI)) "$(DESTDIR)$(UIDIR)/" && \
		echo "installed the /docs page's files in $(DESTDIR)$(UIDIR)"; \
	else \
		echo "no Swagger UI files (node_modules has none): /docs will say so; run make deps first to have them"; \
	fi
	@if [ -e "$(DESTDIR)$(ENVFILE)" ]; then \
		echo "kept the configuration $(DESTDIR)$(ENVFILE)"; \
	else \
		echo "install -m 0600 packaging/actionstools.env $(DESTDIR)$(ENVFILE)"; \
		install -m 0600 packaging/actionstools.env "$(DESTDIR)$(ENVFILE)"; \
	fi
	@echo "Next: set AUTH_JWT_SECRET in $(ENVFILE), then: systemctl daemon-reload; systemctl enable --now actionstools"

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/actionstools" "$(DESTDIR)$(MANDIR)/man1/actionstools.1" \
		"$(DESTDIR)$(UNITDIR)/actionstools.service" "$(DESTDIR)$(DOCDIR)/README.md" \
		"$(DESTDIR)$(DOCDIR)/actionstools.env.example"
	@rmdir "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true
	rm -rf "$(DESTDIR)$(UIDIR)"
	@rmdir "$(DESTDIR)$(PREFIX)/share/actionstools" 2>/dev/null || true
	@if cmp -s packaging/actionstools.env "$(DESTDIR)$(ENVFILE)"; then \
		echo "rm -f $(DESTDIR)$(ENVFILE)"; rm -f "$(DESTDIR)$(ENVFILE)"; \
		rmdir "$(DESTDIR)$(SYSCONFDIR)/actionstools" 2>/dev/null || true; \
	elif [ -e "$(DESTDIR)$(ENVFILE)" ]; then \
		echo "kept the configuration $(DESTDIR)$(ENVFILE) (changed since install)"; \
	fi
	@echo "The service's data, /var/lib/actionstools, stays; remove it yourself if you want."

# Tests of the setup: make run without Node.js, the Node.js provisioning, make install,
# and the installed service booted with systemd in a container (service-check, as root).
test-install: $(BUILD)/release/actionstools
	@echo "== setup tests (make run without Node.js, Node.js provisioning, make install, the service)"
	@node --test tests/install/

service-check:
	@./scripts/service-check.sh

test: deps
	@$(MAKE) --no-print-directory -j2 $(BUILD)/release/actionstools $(BUILD)/asan/actionstools \
		$(release_TESTS) $(asan_TESTS)
	@$(MAKE) --no-print-directory unit api test-install

unit: unit-release unit-asan

unit-release: $(release_TESTS)
	@./scripts/run-unit.sh $(release_TESTS)

unit-asan: $(asan_TESTS)
	@./scripts/run-unit.sh $(asan_TESTS)

api: api-sqlite api-dynamodb

# Black-box tests: the real binary (the sanitizer build) on a temporary database, then
# the same tests against dynalite, a DynamoDB-compatible server.
api-sqlite: $(BUILD)/asan/actionstools
	@echo "== black-box tests, STORAGE=sqlite"
	@AT_BIN=$(CURDIR)/$(BUILD)/asan/actionstools AT_STORAGE=sqlite node --test tests/api/

api-dynamodb: $(BUILD)/asan/actionstools
	@echo "== black-box tests, STORAGE=dynamodb (dynalite)"
	@AT_BIN=$(CURDIR)/$(BUILD)/asan/actionstools AT_STORAGE=dynamodb \
		./scripts/with-dynalite.sh node --test tests/api/

# Benchmarks (bench/, docs/performance.md). `make bench` measures actionstools beside the
# libmicrohttpd hello server and the Flask + gunicorn twin, then the dynamodb backend on
# dynalite; `make bench CONNECTIONS=10000` holds that many idle keep-alive connections while
# wrk measures; `make bench ATTACK=1` runs the slowloris and non-reading clients.
# DURATION (2s), ROUNDS (3: each figure is the median of that many interleaved runs),
# WRK_THREADS (1), WRK_CONNECTIONS (64) tune wrk.
.PHONY: bench-tools
BENCH_TOOLS := $(BUILD)/release/bench/hello $(BUILD)/release/bench/clients

$(BUILD)/release/bench/hello: bench/hello.c
	@mkdir -p $(@D)
	@echo "  CC (bench) $@"
	@$(CC) $(release_CFLAGS) $< -o $@ $(shell pkg-config --libs libmicrohttpd) -lpthread

$(BUILD)/release/bench/clients: bench/clients.c
	@mkdir -p $(@D)
	@echo "  CC (bench) $@"
	@$(CC) $(release_CFLAGS) $< -o $@

-include $(BENCH_TOOLS:=.d)

bench-tools: $(BENCH_TOOLS)

# The benchmark's own tools checked (bench/selftest.sh, about 20 s).
.PHONY: bench-check
bench-check:
	@./bench/deps.sh
	@$(MAKE) --no-print-directory bench-tools
	@./bench/selftest.sh

bench: deps
	@./bench/deps.sh
	@$(MAKE) --no-print-directory -j2 build bench-tools
ifneq ($(CONNECTIONS),)
	@./bench/run.sh --idle $(CONNECTIONS) $(BUILD)/release/actionstools
else ifneq ($(ATTACK),)
	@./bench/run.sh --attack $(BUILD)/release/actionstools
else
	@./bench/run.sh $(BUILD)/release/actionstools
	@STORAGE=dynamodb DURATION=$${DYNAMODB_DURATION:-3s} ROUNDS=$${DYNAMODB_ROUNDS:-1} ./scripts/with-dynalite.sh \
		./bench/run.sh $(BUILD)/release/actionstools
endif

format:
	clang-format -i $$(find src include tests/unit -name '*.[ch]')

clean:
	rm -rf $(BUILD)
