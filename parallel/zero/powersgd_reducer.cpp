#include "parallel/zero/powersgd_reducer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "comm/clock.h"
#include "comm/communicator.h"
#include "compress/nonfinite.h"
#include "compress/splitmix64.h"

namespace cmpi::parallel {
namespace {

// A rows x cols row-major matrix over memory this reducer owns or the flat
// gradient buffer; no copy.
torch::Tensor matrix(float* data, size_t rows, size_t cols) {
  return torch::from_blob(data, {int64_t(rows), int64_t(cols)}, torch::kFloat);
}

// Orthonormalises the columns of p (rows x r, row-major) in place by modified
// Gram-Schmidt, accumulating in double. A column that is (numerically) in the
// span of the earlier ones becomes zero: the approximation then uses fewer
// directions, identically on every rank since p is the same everywhere.
void orthonormalize_columns(float* p, size_t rows, size_t r) {
  std::vector<double> column(rows);
  for (size_t j = 0; j < r; ++j) {
    for (size_t i = 0; i < rows; ++i) column[i] = p[i * r + j];
    double original = 0;
    for (size_t i = 0; i < rows; ++i) original += column[i] * column[i];
    for (size_t k = 0; k < j; ++k) {
      double dot = 0;
      for (size_t i = 0; i < rows; ++i) dot += column[i] * double(p[i * r + k]);
      for (size_t i = 0; i < rows; ++i) column[i] -= dot * double(p[i * r + k]);
    }
    double norm = 0;
    for (size_t i = 0; i < rows; ++i) norm += column[i] * column[i];
    // Relative test: what is left after removing the earlier directions
    // must not be rounding noise of the original column.
    const bool independent = norm > 1e-10 * original && norm > 0;
    const double scale = independent ? 1.0 / std::sqrt(norm) : 0.0;
    for (size_t i = 0; i < rows; ++i) p[i * r + j] = float(column[i] * scale);
  }
}

}  // namespace

bool is_embedding_table(const std::string& name) {
  return name.find("embedding") != std::string::npos ||
         name.find("output_head") != std::string::npos;
}

PowerSgdReducer::PowerSgdReducer(std::vector<PowerSgdTensor> tensors,
                                 std::vector<std::vector<size_t>> tensors_of_bucket,
                                 Options options, comm::Communicator& dp)
    : tensors_(std::move(tensors)),
      tensors_of_bucket_(std::move(tensors_of_bucket)),
      options_(options),
      dp_(dp),
      rank_of_(tensors_.size(), 0),
      residual_(tensors_.size()),
      q_(tensors_.size()),
      reductions_(tensors_of_bucket_.size(), 0) {
  std::vector<char> listed(tensors_.size(), 0);
  for (size_t b = 0; b < tensors_of_bucket_.size(); ++b)
    for (size_t t : tensors_of_bucket_[b]) {
      if (t >= tensors_.size() || listed[t])
        throw std::invalid_argument("PowerSGD: bucket " + std::to_string(b) + " lists tensor " +
                                    std::to_string(t) + " of " + std::to_string(tensors_.size()) +
                                    (t < tensors_.size() ? " a second time" : ""));
      listed[t] = 1;
    }
  const size_t r = size_t(options_.settings.rank);
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const PowerSgdTensor& x = tensors_[t];
    if (x.rows == 0 || x.cols == 0)
      throw std::invalid_argument("PowerSGD: tensor " + std::to_string(t) + " is empty");
    if (x.raw || x.rows < 2 || x.cols < 2) continue;  // a vector: nothing to factor
    const size_t rank = std::min({r, x.rows, x.cols});
    const bool saves = rank * (x.rows + x.cols) < x.rows * x.cols;
    if (!saves && !options_.low_rank_everywhere) continue;
    rank_of_[t] = rank;
    if (options_.settings.error_feedback) residual_[t].assign(x.rows * x.cols, 0.0f);
    reset_q(t);
  }
}

void PowerSgdReducer::reset_q(size_t t) {
  // Uniform in [-1, 1) from a counter-based stream: every rank draws the same
  // Q because every rank resets the same tensors in the same order.
  const size_t n = tensors_[t].cols * rank_of_[t];
  q_[t].resize(n);
  const uint64_t base = compress::splitmix64(options_.settings.seed ^ (q_draws_++ << 20));
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bits = compress::splitmix64(base + i);
    q_[t][i] = float(double(bits >> 11) * 0x1.0p-52 - 1.0);
  }
}

void PowerSgdReducer::restore(const State& state) {
  if (state.residuals.size() != tensors_.size() || state.qs.size() != tensors_.size() ||
      state.reductions.size() != reductions_.size())
    throw std::invalid_argument("PowerSGD state: " + std::to_string(state.residuals.size()) +
                                " residuals, " + std::to_string(state.qs.size()) + " Q's and " +
                                std::to_string(state.reductions.size()) +
                                " buckets, this run has " + std::to_string(tensors_.size()) +
                                " tensors and " + std::to_string(reductions_.size()) + " buckets");
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const auto check = [&](const char* what, size_t got, size_t want) {
      if (got != want)
        throw std::invalid_argument("PowerSGD state: tensor " + std::to_string(t) + "'s " + what +
                                    " holds " + std::to_string(got) + " floats, this run's " +
                                    std::to_string(want));
    };
    check("residual", state.residuals[t].size(), residual_[t].size());
    check("Q", state.qs[t].size(), q_[t].size());
  }
  residual_ = state.residuals;
  q_ = state.qs;
  reductions_ = state.reductions;
  q_draws_ = state.q_draws;
}

size_t PowerSgdReducer::message_floats(size_t bucket) const {
  size_t floats = 0;
  for (size_t t : tensors_of_bucket_[bucket]) {
    const PowerSgdTensor& x = tensors_[t];
    floats += rank_of_[t] ? rank_of_[t] * (x.rows + x.cols) : x.rows * x.cols;
  }
  return floats;
}

size_t PowerSgdReducer::state_bytes() const {
  size_t floats = 0;
  for (size_t t = 0; t < tensors_.size(); ++t) floats += residual_[t].size() + q_[t].size();
  return floats * sizeof(float);
}

void PowerSgdReducer::reduce_bucket(size_t bucket, float* flat) {
  const auto& list = tensors_of_bucket_.at(bucket);
  if (list.empty()) return;
  const bool warming_up = reductions_[bucket]++ < options_.settings.start_step;
  const bool any_low_rank =
      std::any_of(list.begin(), list.end(), [&](size_t t) { return rank_of_[t] != 0; });
  if (warming_up || !any_low_rank) {
    // The bucket's tensors are contiguous: one plain allreduce.
    size_t begin = std::numeric_limits<size_t>::max(), end = 0;
    for (size_t t : list) {
      begin = std::min(begin, tensors_[t].offset);
      end = std::max(end, tensors_[t].offset + tensors_[t].rows * tensors_[t].cols);
    }
    dp_.allreduce(flat + begin, end - begin, comm::Role::kGradient, bucket);
    return;
  }
  reduce_low_rank(bucket, flat);
}

void PowerSgdReducer::reduce_low_rank(size_t bucket, float* flat) {
  torch::NoGradGuard no_grad;
  const auto& list = tensors_of_bucket_[bucket];
  size_t raw_floats = 0, p_floats = 0, q_floats = 0, full_floats = 0;
  for (size_t t : list) {
    const PowerSgdTensor& x = tensors_[t];
    full_floats += x.rows * x.cols;
    if (rank_of_[t] == 0) {
      raw_floats += x.rows * x.cols;
    } else {
      p_floats += x.rows * rank_of_[t];
      q_floats += x.cols * rank_of_[t];
    }
  }
  p_message_.resize(raw_floats + p_floats);
  q_message_.resize(q_floats);
  auto phase_start = comm::Clock::now();

  // 1-2: error feedback, then P_w = D_w Q after the raw tensors.
  size_t at = 0;
  for (size_t t : list)
    if (rank_of_[t] == 0) {
      const size_t n = tensors_[t].rows * tensors_[t].cols;
      std::memcpy(p_message_.data() + at, flat + tensors_[t].offset, n * sizeof(float));
      at += n;
    }
  for (size_t t : list) {
    const size_t r = rank_of_[t];
    if (r == 0) continue;
    const PowerSgdTensor& x = tensors_[t];
    float* d = flat + x.offset;
    if (!residual_[t].empty()) {
      const float* e = residual_[t].data();
      for (size_t i = 0, n = x.rows * x.cols; i < n; ++i) d[i] += e[i];
    }
    auto p = matrix(p_message_.data() + at, x.rows, r);
    torch::mm_out(p, matrix(d, x.rows, x.cols), matrix(q_[t].data(), x.cols, r));
    at += x.rows * r;
  }
  double encode_seconds = comm::seconds_since(phase_start);

  // 3: the raw tensors and the P's, summed in one message.
  dp_.allreduce(p_message_.data(), p_message_.size(), comm::Role::kGradient, bucket);
  phase_start = comm::Clock::now();
  at = 0;
  for (size_t t : list)
    if (rank_of_[t] == 0) {
      const size_t n = tensors_[t].rows * tensors_[t].cols;
      std::memcpy(flat + tensors_[t].offset, p_message_.data() + at, n * sizeof(float));
      at += n;
    }
  const size_t p_begin = at;
  const bool finite = compress::first_nonfinite(p_message_.data() + p_begin, p_floats) == p_floats;
  double decode_seconds = 0;

  if (!finite) {
    // Every rank got the same sum, so every rank takes this branch.
    for (size_t t : list) {
      if (rank_of_[t] == 0) continue;
      const PowerSgdTensor& x = tensors_[t];
      std::fill(flat + x.offset, flat + x.offset + x.rows * x.cols,
                std::numeric_limits<float>::quiet_NaN());
      std::fill(residual_[t].begin(), residual_[t].end(), 0.0f);
      reset_q(t);
    }
    encode_seconds += comm::seconds_since(phase_start);
  } else {
    // 4-5: orthonormal P^, local Q_w = D_w^T P^, residual e_w = D_w - P^ Q_w^T.
    size_t q_at = 0;
    for (size_t t : list) {
      const size_t r = rank_of_[t];
      if (r == 0) continue;
      const PowerSgdTensor& x = tensors_[t];
      float* p_data = p_message_.data() + at;
      orthonormalize_columns(p_data, x.rows, r);
      auto p = matrix(p_data, x.rows, r);
      auto d = matrix(flat + x.offset, x.rows, x.cols);
      auto q = matrix(q_message_.data() + q_at, x.cols, r);
      torch::mm_out(q, d.t(), p);
      if (!residual_[t].empty()) {
        auto e = matrix(residual_[t].data(), x.rows, x.cols);
        torch::mm_out(e, p, q.t());
        torch::sub_out(e, d, e);
      }
      at += x.rows * r;
      q_at += x.cols * r;
    }
    encode_seconds += comm::seconds_since(phase_start);

    // 6-7: Q summed; the result P^ Q^T replaces the gradient.
    dp_.allreduce(q_message_.data(), q_message_.size(), comm::Role::kGradient, bucket);
    phase_start = comm::Clock::now();
    at = p_begin;
    q_at = 0;
    for (size_t t : list) {
      const size_t r = rank_of_[t];
      if (r == 0) continue;
      const PowerSgdTensor& x = tensors_[t];
      auto p = matrix(p_message_.data() + at, x.rows, r);
      auto q = matrix(q_message_.data() + q_at, x.cols, r);
      auto out = matrix(flat + x.offset, x.rows, x.cols);
      torch::mm_out(out, p, q.t());
      if (options_.settings.warm_start)
        std::memcpy(q_[t].data(), q_message_.data() + q_at, x.cols * r * sizeof(float));
      else
        reset_q(t);
      at += x.rows * r;
      q_at += x.cols * r;
    }
    decode_seconds = comm::seconds_since(phase_start);
  }

  // What the full bucket would have cost in the ring allreduce, so that the
  // dp allreduce counters' ratio() is PowerSGD's compression; the reducer's
  // own arithmetic is the codec time of this compressed call (inside its
  // seconds, as a codec's is inside a compressed ring's).
  const int rank = dp_.rank(), size = dp_.size();
  comm::OpCounters& counters = dp_.stats().at(comm::Op::kAllreduce);
  const uint64_t full = comm::ring_allreduce_bytes(full_floats, rank, size);
  uint64_t sent = comm::ring_allreduce_bytes(p_message_.size(), rank, size);
  if (finite) sent += comm::ring_allreduce_bytes(q_message_.size(), rank, size);
  if (full > sent) counters.raw_bytes += full - sent;
  counters.compressed_calls += 1;
  counters.encode_seconds += encode_seconds;
  counters.decode_seconds += decode_seconds;
  counters.seconds += encode_seconds + decode_seconds;
}

}  // namespace cmpi::parallel
