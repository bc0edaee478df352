// tests/support/fixtures.h: access to the committed test fixtures.
#pragma once

#include <string>

namespace tdm::test {

// Absolute path of a file under tests/fixtures/.
std::string fixture_path(const std::string& relative);

// Reads a fixture; a name ending in ".zst" is decompressed. Fails the
// calling test (ADD_FAILURE) and returns "" if the file is missing or corrupt.
std::string read_fixture(const std::string& relative);

// Reads any file whole; "" and a test failure if it cannot be read.
std::string read_file(const std::string& path);

// A fresh empty directory under the system temp dir, removed at process exit.
std::string make_temp_dir(const std::string& tag);

}  // namespace tdm::test
