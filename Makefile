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

# Installs missing Debian packages (apt-get, through sudo when not root) and the
# npm test tools from the committed lockfile.
deps:
	@./scripts/deps.sh

run: deps
	@$(MAKE) --no-print-directory build
	@./scripts/run.sh

test: deps
	@$(MAKE) --no-print-directory -j2 $(BUILD)/release/actionstools $(BUILD)/asan/actionstools \
		$(release_TESTS) $(asan_TESTS)
	@$(MAKE) --no-print-directory unit api

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

bench: deps
	@$(MAKE) --no-print-directory build
	@./bench/run.sh $(BUILD)/release/actionstools
	@STORAGE=dynamodb DURATION=$${DURATION:-3s} ./scripts/with-dynalite.sh ./bench/run.sh $(BUILD)/release/actionstools

format:
	clang-format -i $$(find src include tests/unit -name '*.[ch]')

clean:
	rm -rf $(BUILD)
