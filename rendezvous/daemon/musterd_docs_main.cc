// musterd-docs: prints the parts of musterd's man page and bash completion
// that come from its flag table (daemon_flags.h), to paste between the
// "generated" markers of packaging/man/musterd.1 (`musterd-docs man`) and
// packaging/completion/musterd (`musterd-docs completion`).
#include <iostream>
#include <string>

#include "rendezvous/daemon/daemon_flags.h"

int main(int argc, char** argv) {
  const std::string what = argc == 2 ? argv[1] : "";
  if (what == "man") {
    std::cout << muster::rdzv::DaemonManOptions();
  } else if (what == "completion") {
    std::cout << muster::rdzv::DaemonCompletionLists();
  } else {
    std::cerr << "usage: musterd-docs man|completion\n";
    return 2;
  }
  return 0;
}
