// Loading model plugins: the example's vgg family, and each way a plugin can be wrong, with
// one line naming the plugin and what to do. Plain C++: the loader's header has no LibTorch.
#include <sys/stat.h>

#include <fstream>

#include <catch2/catch.hpp>

#include "layers/model_plugin_loader.hpp"
#include "packtune/error.hpp"
#include "../temp_dir.hpp"

using packtune::layers::load_model_plugin;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const packtune::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

}  // namespace

TEST_CASE("a model plugin registers its families once, however often it is loaded") {
  const auto names = load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_VGG);
  CHECK(names == std::vector<std::string>{"vgg"});
  CHECK(load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_VGG) == names);
}

TEST_CASE("a model plugin path that is there but not a regular file says so without opening it") {
  packtune::testing::TempDir dir;
  const auto fifo = dir.file("plugin.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // opening it would block: nobody writes to it
  const std::string expected = "; expected the path of a shared library (.so) built against packtune::layers";
  CHECK(error_of([&] { load_model_plugin(fifo); }) == "model plugin " + fifo + ": not a regular file (a FIFO)" + expected);
  CHECK(error_of([] { load_model_plugin("/dev/zero"); }) ==
        "model plugin /dev/zero: not a regular file (a character device)" + expected);
  CHECK(error_of([&] { load_model_plugin(dir.path().string()); }) ==
        "model plugin " + dir.path().string() + ": not a regular file (a folder)" + expected);
}

TEST_CASE("a bad model plugin is one line naming it and what is wrong") {
  CHECK_THAT(error_of([] { load_model_plugin("/nonexistent/libmodel.so"); }),
             Catch::StartsWith("model plugin /nonexistent/libmodel.so: no such file"));
  packtune::testing::TempDir dir;
  const auto not_a_library = (dir.path() / "model.so").string();
  std::ofstream(not_a_library) << "not ELF\n";
  CHECK_THAT(error_of([&] { load_model_plugin(not_a_library); }), Catch::Contains(": cannot be loaded: "));
  CHECK_THAT(error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_UNVERSIONED); }),
             Catch::Contains("exports no packtune_model_plugin_version"));
  CHECK_THAT(error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_STALE); }),
             Catch::Contains("built against model plugin interface version 0, this packtune takes version ") &&
                 Catch::EndsWith("; rebuild it against this packtune"));
  CHECK_THAT(error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_EMPTY); }),
             Catch::Contains("registers no model family"));
  CHECK_THAT(error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_TAKEN_NAME, {"cnn"}); }),
             Catch::Contains("registers model family \"cnn\", a name packtune or another plugin has taken"));
  CHECK_THAT(error_of([] {
               load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_TAKEN_NAME, {},
                                 [](const packtune::layers::FamilyDeclaration& f) {
                                   throw packtune::InputError("family " + f.name + " refused");
                                 });
             }),
             Catch::EndsWith(": family cnn refused"));
  for (const auto& text : {error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_STALE); }),
                           error_of([] { load_model_plugin(PACKTUNE_TEST_MODEL_PLUGIN_EMPTY); })}) {
    CHECK(text.find('\n') == std::string::npos);
  }
}
