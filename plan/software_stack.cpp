#include "plan/software_stack.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/units.h"

namespace cmpi::plan {
namespace {

// Each number was fitted on the one row of docs/planner.md's validation
// table named here (chosen before fitting, the others kept for checking it):
// the efficiency that brings that row's planned TFLOP/s per GPU to the
// published figure, rounded to two digits.
std::vector<SoftwareStack> builtin_stacks() {
  return {
      SoftwareStack{},
      {"gpt-neox", 0.82,
       "EleutherAI's gpt-neox (2022: Megatron-LM's layers on DeepSpeed's pipeline engine)",
       "neox-20b (GPT-NeoX-20B, 96 A100-40GB)"},
      {"megatron-deepspeed", 0.78,
       "Megatron-DeepSpeed (Megatron-LM's tensor-parallel layers on DeepSpeed's pipeline and "
       "data parallelism; MT-NLG 2021, BLOOM 2022)",
       "mtnlg-530b-2240 (MT-NLG 530B, 2240 A100-80GB)"},
  };
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return text;
}

}  // namespace

std::vector<std::string> builtin_stack_names() {
  std::vector<std::string> names;
  for (const SoftwareStack& s : builtin_stacks()) names.push_back(s.name);
  return names;
}

SoftwareStack load_software_stack(const std::string& name) {
  const std::string wanted = lower(name);
  for (const SoftwareStack& s : builtin_stacks())
    if (s.name == wanted) return s;
  throw std::invalid_argument(
      "--plan-stack: " +
      config::unknown_word_message("software stack", name, builtin_stack_names()));
}

}  // namespace cmpi::plan
