// StagingPipeline (staging_pipeline.h): the per-chunk state machine.
#include "comm/device/staging_pipeline.h"

#include <cstring>
#include <stdexcept>

namespace cmpi::comm::device {

StagingPipeline::StagingPipeline(Device& device, DeviceCodec* codec, StagingOptions options)
    : device_(device), codec_(codec), options_(options) {
  if (options.streams < 1 || options.chunk_floats < 1)
    throw std::invalid_argument("staging pipeline: streams and chunk_floats must be >= 1");
  for (int s = 0; s < options.streams; ++s) {
    const StreamId stream = device.create_stream();
    for (auto* slots : {&send_slots_, &recv_slots_}) {
      Slot slot{stream,
                device.create_event(),
                compress::cuda::PinnedBuffer(device, 8 + slot_payload_bytes()),
                compress::cuda::DeviceBuffer(device, codec ? slot_payload_bytes() : 0),
                compress::cuda::DeviceBuffer(device, 8),
                -1};
      slots->push_back(std::move(slot));
    }
  }
  caller_ready_ = device.create_event();
}

StagingPipeline::~StagingPipeline() {
  for (auto& slot : send_slots_) device_.synchronize_stream(slot.stream);
}

uint64_t StagingPipeline::slot_payload_bytes() const {
  return codec_ ? codec_->max_payload_bytes(options_.chunk_floats) : 4 * options_.chunk_floats;
}

void StagingPipeline::add_send(const std::vector<int>& peers, const float* source, uint64_t n) {
  for (uint64_t first = 0; first < n || (n == 0 && first == 0); first += options_.chunk_floats) {
    Chunk chunk;
    chunk.peers = peers;
    chunk.source = source + first;
    chunk.n = n == 0 ? 0 : std::min(options_.chunk_floats, n - first);
    sends_.push_back(chunk);
    if (n == 0) break;
  }
}

void StagingPipeline::add_recv(int peer, float* destination, uint64_t n, int relay_to) {
  for (uint64_t first = 0; first < n || (n == 0 && first == 0); first += options_.chunk_floats) {
    Chunk chunk;
    chunk.peers = {peer};
    chunk.relay_to = relay_to;
    chunk.destination = destination + first;
    chunk.n = n == 0 ? 0 : std::min(options_.chunk_floats, n - first);
    recvs_.push_back(chunk);
    if (n == 0) break;
  }
}

void StagingPipeline::start(StreamId caller) {
  device_.record(caller_ready_, caller);
  for (const auto& slot : send_slots_) device_.wait(slot.stream, caller_ready_);
}

void StagingPipeline::finish(StreamId caller) {
  for (auto& slot : recv_slots_) {
    device_.record(slot.event, slot.stream);
    device_.wait(caller, slot.event);
  }
  sends_.clear(), recvs_.clear();
  next_send_post_ = next_recv_post_ = next_relay_post_ = 0;
}

void StagingPipeline::run(Transport& transport, StreamId caller) {
  start(caller);
  while (!progress(transport)) {
  }
  finish(caller);
}

bool StagingPipeline::progress(Transport& transport) {
  bool all_done = true;
  for (size_t c = 0; c < sends_.size(); ++c) {
    if (sends_[c].state != State::kDone) advance_send(c, transport);
    all_done = all_done && sends_[c].state == State::kDone;
  }
  for (size_t c = 0; c < recvs_.size(); ++c) {
    if (recvs_[c].state != State::kDone) advance_recv(c, transport);
    all_done = all_done && recvs_[c].state == State::kDone;
  }
  return all_done;
}

void StagingPipeline::advance_send(size_t c, Transport& transport) {
  Chunk& chunk = sends_[c];
  Slot& slot = send_slots_[c % send_slots_.size()];
  switch (chunk.state) {
    case State::kWaiting: {
      // Chunks take a slot in order: c only after c - streams is done.
      if (slot.owner != -1 ||
          (c >= send_slots_.size() && sends_[c - send_slots_.size()].state != State::kDone))
        return;
      slot.owner = int(c);
      log_.push_back("encode " + std::to_string(c));
      if (!codec_) {
        chunk.payload_bytes = 4 * chunk.n;
        device_.copy_to_host(slot.host.as() + 8, chunk.source, chunk.payload_bytes, slot.stream);
        device_.record(slot.event, slot.stream);
        chunk.state = State::kStaged;
        return;
      }
      codec_->encode(chunk.source, chunk.n, slot.device.as(), slot.word.as<uint64_t>(),
                     slot.stream);
      device_.copy_to_host(slot.host.as(), slot.word.as(), 8, slot.stream);
      device_.record(slot.event, slot.stream);
      chunk.state = State::kSized;
      return;
    }
    case State::kSized: {
      if (!device_.query(slot.event)) return;
      std::memcpy(&chunk.payload_bytes, slot.host.as(), 8);
      if (chunk.payload_bytes == 0 || chunk.payload_bytes > slot_payload_bytes())
        throw std::runtime_error("staging: device codec " + codec_->spec().to_string() +
                                 " could not encode chunk " + std::to_string(c) +
                                 " (non-finite input?)");
      device_.copy_to_host(slot.host.as() + 8, slot.device.as(), chunk.payload_bytes, slot.stream);
      device_.record(slot.event, slot.stream);
      chunk.state = State::kStaged;
      return;
    }
    case State::kStaged: {
      if (next_send_post_ != c || !device_.query(slot.event)) return;
      for (int peer : chunk.peers) {
        log_.push_back("send " + std::to_string(c) + " -> " + std::to_string(peer));
        chunk.handles.push_back(transport.post_send(peer, slot.host.as() + 8, chunk.payload_bytes));
      }
      ++next_send_post_;
      chunk.state = State::kSending;
      return;
    }
    case State::kSending: {
      for (auto it = chunk.handles.begin(); it != chunk.handles.end();)
        it = transport.test(*it, nullptr) ? chunk.handles.erase(it) : it + 1;
      if (!chunk.handles.empty()) return;
      chunk.state = State::kDone;
      slot.owner = -1;
      return;
    }
    default:
      return;
  }
}

void StagingPipeline::advance_recv(size_t c, Transport& transport) {
  Chunk& chunk = recvs_[c];
  Slot& slot = recv_slots_[c % recv_slots_.size()];
  switch (chunk.state) {
    case State::kWaiting: {
      if (next_recv_post_ != c || slot.owner != -1) return;
      slot.owner = int(c);
      log_.push_back("recv " + std::to_string(c) + " <- " + std::to_string(chunk.peers[0]));
      chunk.handles = {transport.post_recv(chunk.peers[0], slot.host.as() + 8,
                                           codec_ ? slot_payload_bytes() : 4 * chunk.n)};
      ++next_recv_post_;
      chunk.state = State::kReceiving;
      return;
    }
    case State::kReceiving: {
      size_t bytes = 0;
      if (!transport.test(chunk.handles[0], &bytes)) return;
      chunk.handles.clear();
      chunk.payload_bytes = bytes;
      chunk.state = State::kReceived;
      [[fallthrough]];
    }
    case State::kReceived: {
      const size_t bytes = chunk.payload_bytes;
      if (chunk.relay_to >= 0) {
        // Relayed chunks go out in chunk order, as the next rank matches them.
        if (next_relay_post_ != c) return;
        log_.push_back("relay " + std::to_string(c) + " -> " + std::to_string(chunk.relay_to));
        chunk.handles = {transport.post_send(chunk.relay_to, slot.host.as() + 8, bytes)};
        ++next_relay_post_;
      }
      log_.push_back("decode " + std::to_string(c));
      if (!codec_) {
        if (bytes != 4 * chunk.n)
          throw std::runtime_error("staging: chunk " + std::to_string(c) + " from rank " +
                                   std::to_string(chunk.peers[0]) + " holds " +
                                   std::to_string(bytes) + " bytes, expected " +
                                   std::to_string(4 * chunk.n));
        device_.copy_to_device(chunk.destination, slot.host.as() + 8, bytes, slot.stream);
      } else {
        device_.copy_to_device(slot.device.as(), slot.host.as() + 8, bytes, slot.stream);
        codec_->decode(slot.device.as(), bytes, chunk.destination, chunk.n,
                       slot.word.as<uint32_t>(), slot.stream);
        device_.copy_to_host(slot.host.as(), slot.word.as(), 4, slot.stream);
      }
      device_.record(slot.event, slot.stream);
      chunk.state = State::kDecoding;
      return;
    }
    case State::kDecoding: {
      for (auto it = chunk.handles.begin(); it != chunk.handles.end();)
        it = transport.test(*it, nullptr) ? chunk.handles.erase(it) : it + 1;
      if (!chunk.handles.empty() || !device_.query(slot.event)) return;
      if (codec_) {
        uint32_t status;
        std::memcpy(&status, slot.host.as(), 4);
        compress::cuda::check_decode_status(status, *codec_);
      }
      chunk.state = State::kDone;
      slot.owner = -1;
      return;
    }
    default:
      return;
  }
}

}  // namespace cmpi::comm::device
