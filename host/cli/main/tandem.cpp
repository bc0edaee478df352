// SPDX-License-Identifier: Apache-2.0
// host/cli/main/tandem.cpp: the tandem executable. Everything is in run_cli();
// only main decides the process exit status.
#include "cli/commands.h"

int main(int argc, char** argv) { return tdm::cli::run_cli(argc, argv); }
