// A shared library that loads fine but registers no tuner: the plugin loader must say so.
extern "C" int packtune_test_plugin_without_tuners() { return 42; }
