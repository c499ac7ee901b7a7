// Compiled only to own the precompiled <torch/torch.h> that every
// torch-facing target reuses.
