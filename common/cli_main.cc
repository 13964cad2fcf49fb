#include "common/cli_main.h"

#include <string>

#ifndef GLEANER_VERSION
#define GLEANER_VERSION "unknown"
#endif

namespace gleaner {

namespace {
int g_exit_code = 0;
}  // namespace

const char* build_version() {
  return GLEANER_VERSION;
}

int exit_code() {
  return g_exit_code;
}
void set_exit_code(int code) {
  g_exit_code = code;
}

int run_cli(CLI::App& app, int argc, char** argv) {
  std::string name = app.get_name();
  if (name.empty() && argc > 0) {
    name = argv[0];
    name = name.substr(name.rfind('/') + 1);
  }
  app.set_version_flag("--version", name + " " + build_version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);  // prints the message and the usage hint
    return kExitUsage;
  }
  return exit_code();
}

}  // namespace gleaner
