// Reading an input file whole, with one error line for each way it can fail.
#pragma once

#include <string>
#include <string_view>

namespace topocoll {

// The bytes of `path`. Throws InputError "PATH: no such file: expected EXPECTED" (likewise "is a
// directory", "cannot be read"); `expected` names what the file should be ("a YAML cluster
// spec", ...).
std::string read_input_file(const std::string& path, std::string_view expected);

}  // namespace topocoll
