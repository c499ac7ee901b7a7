// What the Hugging Face format tests share: the message of the exception a
// call throws, to compare a refusal's wording.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace cmpi::hf::testing {

// e.what() of what f throws; "(no error)" if it returns.
inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace cmpi::hf::testing
