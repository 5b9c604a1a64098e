// The simulated actors' loop: joining, answering the driver's messages, and reporting each
// job when its timer fires.
#include "bench/load_bench/fleet.hpp"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "packtune/error.hpp"
#include "protocol/peer_guard.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune::bench {

Fleet::Fleet(const Options& options, const tuners::TunerContext& context, DriverProcess& driver)
    : options_(options), driver_(driver), objective_(tuners::make_objective(options.objective, context)) {
  context_.set(zmq::ctxopt::io_threads, 1);
  // Each DEALER holds a mailbox descriptor and its connection's.
  context_.set(zmq::ctxopt::max_sockets, options.actors + 64);
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_ < 0 || timer_ < 0) throw Error(std::string("epoll/timerfd: ") + std::strerror(errno));
  add_fd(timer_, kTimer);
}

Fleet::~Fleet() {
  actors_.clear();
  ::close(timer_);
  ::close(epoll_);
}

void Fleet::join(const std::string& endpoint) {
  actors_.reserve(static_cast<std::size_t>(options_.actors));
  for (int i = 0; i < options_.actors; ++i) {
    SimActor a{zmq::socket_t(context_, zmq::socket_type::dealer)};
    a.socket.set(zmq::sockopt::linger, 0);
    a.socket.connect(endpoint);
    a.redial.emplace(endpoint, std::chrono::milliseconds(static_cast<long>(options_.heartbeat_seconds * 1000)));
    actors_.push_back(std::move(a));
    add_fd(actors_.back().socket.get(zmq::sockopt::fd), static_cast<std::uint32_t>(i));
  }
  hello_.host = "load-bench";
  hello_.pid = ::getpid();
  hello_.threads = 1;
  for (int i = 0; i < options_.actors; ++i) say_hello(i);
  // Over the driver's connection cap the rest are refused for as long as the first stay: the
  // run goes on once the cap's worth joined (the driver has no connection of its own) and the
  // driver refused one of the others. Not each of them: those cut before their handshake
  // reconnect every 100-200 ms and may go on being cut (docs/security.md).
  const int expected =
      options_.driver_open_files > 0
          ? static_cast<int>(std::min<std::int64_t>(
                options_.actors, protocol::PeerGuard::limits_for(options_.driver_open_files).max_connections))
          : options_.actors;
  const bool over_cap = expected < options_.actors;
  const auto started = Clock::now();
  while (welcomed_ < expected || (over_cap && refusals() == 0)) {
    const auto now = Clock::now();
    if (now - started > std::chrono::seconds(120)) {
      driver_.fail(std::to_string(welcomed_) + " of the " + std::to_string(expected) + " actors expected were welcomed, " +
                   std::to_string(refusals()) + " refusals, in 120 s");
    }
    keep_alive(now);
    poll_once(std::chrono::milliseconds(100));
  }
}

std::int64_t Fleet::refusals() const {
  std::int64_t n = 0;
  for (const auto& a : actors_) n += a.redial->refusals();
  return n;
}

// As hello_driver: said again now and then, and after each connection the driver refused;
// never with a blocking send, which would wait for ever on a refused connection.
void Fleet::say_hello(int i) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  const auto bytes = proto::encode(hello_);
  if (a.socket.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) ++counters_.sent;
  a.last_sent = Clock::now();
  rechecks_.push_back(i);
  a.next_hello = a.last_sent + a.hello_interval;
  a.hello_interval = std::min(a.hello_interval * 2, std::chrono::milliseconds(16000));
}

void Fleet::run() {
  const auto ready = this->ready();
  ready_at_ = Clock::now();
  for (int i = 0; i < options_.actors; ++i) {
    if (actors_[static_cast<std::size_t>(i)].welcomed) send(i, ready);
  }
  next_sweep_ = Clock::now();
  while (!shutdown_) {
    fire_due();
    if (Clock::now() >= next_sweep_) sweep();
    drain_rechecks();
    if (shutdown_) break;
    arm_timer();
    poll_once(rechecks_.empty() ? std::chrono::milliseconds(-1) : std::chrono::milliseconds(0));
  }
}

void Fleet::add_fd(int fd, std::uint32_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u32 = tag;
  if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) throw Error(std::string("epoll_ctl: ") + std::strerror(errno));
}

void Fleet::send(int i, const proto::Message& message) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  send_message(a.socket, message);
  a.last_sent = Clock::now();
  ++counters_.sent;
  // A send may take the socket's pending read signal: its ZMQ_EVENTS must be read again.
  rechecks_.push_back(i);
}

void Fleet::poll_once(std::chrono::milliseconds timeout) {
  epoll_event events[256];
  const int n = ::epoll_wait(epoll_, events, 256, static_cast<int>(timeout.count()));
  for (int e = 0; e < n; ++e) {
    if (events[e].data.u32 == kTimer) {
      std::uint64_t expirations = 0;
      [[maybe_unused]] auto r = ::read(timer_, &expirations, sizeof expirations);
    } else {
      drain(static_cast<int>(events[e].data.u32));
    }
  }
  drain_rechecks();
}

void Fleet::drain_rechecks() {
  while (!rechecks_.empty()) {
    const int i = rechecks_.back();
    rechecks_.pop_back();
    drain(i);
  }
}

// Reads every message the socket holds.
void Fleet::drain(int i) {
  auto& socket = actors_[static_cast<std::size_t>(i)].socket;
  while (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) {
    zmq::message_t frame;
    if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
    while (frame.more()) {
      zmq::message_t extra;  // a payload frame belongs to checkpoint transfers only
      if (!socket.recv(extra, zmq::recv_flags::dontwait)) break;
      if (!extra.more()) break;
    }
    ++counters_.received;
    handle(i, proto::decode(frame.data(), frame.size()));
  }
}

void Fleet::handle(int i, const proto::Message& message) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  if (auto* welcome = std::get_if<proto::Welcome>(&message)) {
    if (a.welcomed) return;  // the answer to a Hello said again
    a.id = welcome->actor_id;
    a.welcomed = true;
    a.redial->heard();
    if (!a.ever_welcomed) ++ever_welcomed_;
    a.ever_welcomed = true;
    checkpoint_dir_ = welcome->spec.checkpoint_dir;
    ++welcomed_;
    if (ready_at_.time_since_epoch().count() != 0) send(i, ready());  // joined after the others
  } else if (auto* assign = std::get_if<proto::Assign>(&message)) {
    on_assign(i, *assign);
  } else if (auto* stop = std::get_if<proto::Stop>(&message)) {
    a.jobs.erase(stop->trial);
    if (a.jobs.empty()) mark_idle(a);
  } else if (std::holds_alternative<proto::Heartbeat>(message)) {
    ++counters_.heartbeats_received;
  } else if (std::holds_alternative<proto::Shutdown>(message)) {
    if (!shutdown_) shutdown_at_ = Clock::now();
    shutdown_ = true;
  } else if (auto* profile = std::get_if<proto::Profile>(&message)) {
    // Not asked with fuse "never"; answered so that a driver that asks does not wait.
    send(i, proto::Profiled{profile->key, "cpu", {}, {}, "a simulated actor measures nothing"});
  } else if (std::holds_alternative<proto::Rejoin>(message)) {
    // As a real actor: a peer the driver does not know (a connection that went, a new one
    // that came) drops its jobs and says Hello again.
    ++rejoins_;
    if (a.welcomed) --welcomed_;
    a.welcomed = false;
    a.jobs.clear();
    mark_idle(a);
    a.hello_interval = std::chrono::milliseconds(2000);
    say_hello(i);
  } else if (auto* reject = std::get_if<proto::Reject>(&message)) {
    driver_.fail("the driver refused a simulated actor: " + reject->reason);
  } else {
    driver_.fail(std::string("a simulated actor got an unexpected ") + proto::verb(message));
  }
}

void Fleet::on_assign(int i, const proto::Assign& assign) {
  const auto now = Clock::now();
  if (!first_assign_) {
    first_assign_ = now;
    cpu_at_first_assign_ = process_cpu(driver_.pid());
    counters_at_first_assign_ = counters_;
  }
  ++counters_.assigns;
  auto& a = actors_[static_cast<std::size_t>(i)];
  if (!a.assigned && ++assigned_actors_ == options_.actors) all_assigned_ = now;
  a.assigned = true;
  if (a.idle && a.idle_since.time_since_epoch().count() != 0) idle_gaps_.push_back(seconds(now - a.idle_since));
  a.idle = false;
  Job job;
  job.trial = assign.trial;
  job.config = assign.config;
  job.budget = assign.budget;
  job.checkpoint = assign.checkpoint;
  job.lease = assign.lease;
  job.started = now;
  // A promotion resumes from the trial's checkpoint, which this process "wrote" (no file
  // exists: the driver only records and deletes names).
  if (!assign.resume_from.empty()) {
    auto held = checkpoints_.find(assign.trial);
    if (held != checkpoints_.end() && held->second.first == assign.resume_from.front()) {
      job.start_budget = held->second.second;
    }
  }
  job.reached = job.start_budget;
  a.jobs[assign.trial] = job;
  schedule(i, a.jobs[assign.trial]);
}

// The job's next report: the next multiple of report_every, or its budget.
double Fleet::next_point(const Job& job) const {
  if (options_.report_every <= 0) return job.budget;
  const double k = std::floor(job.reached / options_.report_every + 1e-9) + 1;
  return std::min(job.budget, k * options_.report_every);
}

Clock::time_point Fleet::due(const Job& job, double point) const {
  return job.started +
         std::chrono::duration_cast<Clock::duration>(
             std::chrono::duration<double>((point - job.start_budget) * options_.time_scale));
}

void Fleet::fire_due() {
  while (!wakeups_.empty()) {
    const auto now = Clock::now();
    const Wakeup w = wakeups_.top();
    if (w.due > now) return;
    wakeups_.pop();
    auto& a = actors_[static_cast<std::size_t>(w.actor)];
    auto it = a.jobs.find(w.trial);
    if (it == a.jobs.end()) continue;  // stopped
    const double late = seconds(now - w.due);
    lateness_ += late;
    max_lateness_ = std::max(max_lateness_, late);
    ++fired_;
    report(w.actor, it->second);
  }
}

void Fleet::report(int i, Job& job) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  const double point = next_point(job);
  const double metric = objective_->evaluate(job.trial, job.config, point);
  proto::Report r;
  r.trial = job.trial;
  r.budget = point;
  r.metrics = {{"val_accuracy", metric}, {"val_loss", 1 - metric}, {"train_loss", 1 - metric}};
  r.final = point >= job.budget;
  r.train_seconds = (point - job.start_budget) * options_.time_scale;
  r.start_budget = job.start_budget;
  r.unit_size = 1;
  r.lease = job.lease;
  job.reached = point;
  if (!r.final) {
    send(i, r);
    schedule(i, job);
    return;
  }
  if (job.checkpoint && !checkpoint_dir_.empty()) {
    char name[96];
    std::snprintf(name, sizeof name, "/trial-%" PRId64 "-budget-%g.h5", job.trial, job.budget);
    r.checkpoint = checkpoint_dir_ + name;
    checkpoints_[job.trial] = {r.checkpoint, job.budget};
  }
  busy_seconds_ += seconds(Clock::now() - job.started);
  a.jobs.erase(job.trial);
  ++counters_.final_reports;
  send(i, r);
  if (a.jobs.empty()) mark_idle(a);
}

void Fleet::mark_idle(SimActor& a) {
  a.idle = true;
  a.idle_since = Clock::now();
}

proto::Ready Fleet::ready() const {
  proto::Ready ready;
  ready.device = "cpu";
  ready.capacity_bytes = std::int64_t{16} << 30;
  ready.capacity_shared = false;
  return ready;
}

// As a real actor: a Heartbeat after heartbeat_seconds without sending anything once it
// joined, and its Hello again while it has not (one pass over the actors for both).
void Fleet::keep_alive(Clock::time_point now) {
  const auto period = std::chrono::duration<double>(options_.heartbeat_seconds);
  for (int i = 0; i < options_.actors; ++i) {
    auto& a = actors_[static_cast<std::size_t>(i)];
    if (!a.welcomed) {
      if (a.redial->step(a.socket, now) || (!a.redial->waiting() && now >= a.next_hello)) say_hello(i);
    } else if (now - a.last_sent >= period) {
      send(i, proto::Heartbeat{});
      ++counters_.heartbeats_sent;
    }
  }
}

void Fleet::sweep() {
  const auto now = Clock::now();
  keep_alive(now);
  if (!driver_.running()) driver_.fail("the driver exited during the run");
  next_sweep_ = now + std::chrono::milliseconds(100);
}

// The timer wakes the loop at the next report or sweep, to the nanosecond.
void Fleet::arm_timer() {
  auto next = next_sweep_;
  if (!wakeups_.empty()) next = std::min(next, wakeups_.top().due);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next.time_since_epoch()).count();
  itimerspec spec{};
  spec.it_value.tv_sec = std::max<std::int64_t>(0, ns / 1000000000);
  spec.it_value.tv_nsec = ns % 1000000000;
  if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
  ::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
}

}  // namespace packtune::bench
