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
  context_.set(zmq::ctxopt::max_sockets, (options.nodes > 0 ? options.nodes : options.actors) + 64);
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_ < 0 || timer_ < 0) throw Error(std::string("epoll/timerfd: ") + std::strerror(errno));
  add_fd(timer_, kTimer);
}

Fleet::~Fleet() {
  links_.clear();
  ::close(timer_);
  ::close(epoll_);
}

// One link per actor, or per node with its actors behind it.
void Fleet::connect(const std::string& endpoint) {
  const bool nodes = options_.nodes > 0;
  const int links = nodes ? options_.nodes : options_.actors;
  const int per_link = nodes ? options_.actors_per_node : 1;
  links_.reserve(static_cast<std::size_t>(links));
  actors_.resize(static_cast<std::size_t>(options_.actors));
  for (int l = 0; l < links; ++l) {
    links_.emplace_back(context_, nodes);
    auto& link = links_.back();
    link.socket.connect(endpoint);
    link.redial.emplace(endpoint, std::chrono::milliseconds(static_cast<long>(options_.heartbeat_seconds * 1000)));
    for (int j = 0; j < per_link; ++j) {
      const int i = l * per_link + j;
      link.actors.push_back(i);
      actors_[static_cast<std::size_t>(i)].link = l;
      if (nodes) {
        actors_[static_cast<std::size_t>(i)].slot = j;
        actors_[static_cast<std::size_t>(i)].envelope = envelope_of(j);
      }
    }
    add_fd(link.socket.get(zmq::sockopt::fd), static_cast<std::uint32_t>(l));
  }
}

void Fleet::join(const std::string& endpoint) {
  connect(endpoint);
  hello_.host = "load-bench";
  hello_.pid = ::getpid();
  hello_.threads = 1;
  if (options_.nodes > 0) {
    // As `packtune node`: the node registers, then its actors say Hello naming it.
    for (int l = 0; l < options_.nodes; ++l) say_node_hello(l);
    const auto started = Clock::now();
    while (nodes_welcomed_ < options_.nodes) {
      if (Clock::now() - started > std::chrono::seconds(120)) {
        driver_.fail(std::to_string(nodes_welcomed_) + " of " + std::to_string(options_.nodes) +
                     " nodes were welcomed in 120 s");
      }
      keep_alive(Clock::now());
      poll_once(std::chrono::milliseconds(100));
    }
  }
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
  for (const auto& l : links_) n += l.redial->refusals();
  return n;
}

// As hello_driver: said again now and then, and after each connection the driver refused;
// never with a blocking send, which would wait for ever on a refused connection.
void Fleet::say_hello(int i) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  auto& link = links_[static_cast<std::size_t>(a.link)];
  auto hello = hello_;
  if (link.node) {
    hello.node_id = link.node_id;
    hello.local_index = a.slot;
    // After what the actor said before (a relay keeps each actor's order).
    flush_held(link);
  }
  if (try_send(link, a.envelope, hello)) ++counters_.sent;
  a.last_sent = Clock::now();
  rechecks_.push_back(a.link);
  a.next_hello = a.last_sent + a.hello_interval;
  a.hello_interval = std::min(a.hello_interval * 2, std::chrono::milliseconds(16000));
}

void Fleet::say_node_hello(int l) {
  auto& link = links_[static_cast<std::size_t>(l)];
  proto::NodeHello hello;
  hello.host = "load-bench-node-" + std::to_string(l);
  hello.pid = ::getpid();
  hello.cores = 1;
  hello.memory_bytes = std::int64_t{16} << 30;
  hello.actors = options_.actors_per_node;
  hello.node_id = link.node_id;
  if (try_send(link, envelope_of(-1), hello)) ++counters_.sent;
  link.last_sent = Clock::now();
  rechecks_.push_back(l);
  link.next_hello = link.last_sent + link.hello_interval;
  link.hello_interval = std::min(link.hello_interval * 2, std::chrono::milliseconds(16000));
}

// The node's own messages: its Welcome, the driver's heartbeats, the end.
void Fleet::handle_node(int l, const proto::Message& message) {
  auto& link = links_[static_cast<std::size_t>(l)];
  if (auto* welcome = std::get_if<proto::NodeWelcome>(&message)) {
    if (link.node_id < 0) ++nodes_welcomed_;
    link.node_id = welcome->node_id;
    link.redial->heard();
  } else if (std::holds_alternative<proto::Heartbeat>(message)) {
    ++counters_.heartbeats_received;
  } else if (std::holds_alternative<proto::Shutdown>(message)) {
    if (!shutdown_) shutdown_at_ = Clock::now();
    shutdown_ = true;
  } else if (std::holds_alternative<proto::Rejoin>(message)) {
    ++rejoins_;
    say_node_hello(l);
  } else if (auto* reject = std::get_if<proto::Reject>(&message)) {
    driver_.fail("the driver refused a simulated node: " + reject->reason);
  } else {
    driver_.fail(std::string("a simulated node got an unexpected ") + proto::verb(message));
  }
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
  auto& link = links_[static_cast<std::size_t>(a.link)];
  const std::size_t held = link.held.size();
  if (link.node && held == 0) held_links_.push_back(a.link);
  send_on(link, a.envelope, message);
  a.last_sent = Clock::now();
  ++counters_.sent;
  // A send may take the socket's pending read signal: its ZMQ_EVENTS must be read again. A
  // node's link sends when a full bundle goes before this message.
  if (!link.node || link.held.size() <= held) rechecks_.push_back(a.link);
}

void Fleet::poll_once(std::chrono::milliseconds timeout) {
  // What this turn's actors said goes before the fleet waits, a bundle per node.
  for (int l : held_links_) {
    // A send may take the socket's pending read signal: its ZMQ_EVENTS must be read again.
    if (flush_held(links_[static_cast<std::size_t>(l)])) rechecks_.push_back(l);
  }
  held_links_.clear();
  if (!rechecks_.empty()) timeout = std::chrono::milliseconds(0);
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

// Redial::step reads the socket's ZMQ_EVENTS, and reading them takes the edge that ZMQ_FD
// gives for a message come meanwhile: epoll would not report the socket again, and a Welcome
// waited there until the Hello was said again 2 s later (the last fifth of 1,000 actors did).
void Fleet::recheck_after_events(int l) {
  if (links_[static_cast<std::size_t>(l)].socket.get(zmq::sockopt::events) & ZMQ_POLLIN) rechecks_.push_back(l);
}

void Fleet::drain_rechecks() {
  while (!rechecks_.empty()) {
    const int i = rechecks_.back();
    rechecks_.pop_back();
    drain(i);
  }
}

// Reads every message the link holds, each to its actor or its node.
void Fleet::drain(int l) {
  auto& link = links_[static_cast<std::size_t>(l)];
  while (link.socket.get(zmq::sockopt::events) & ZMQ_POLLIN) {
    const auto deliveries = receive_on(link);
    if (deliveries.empty()) break;
    for (const auto& delivery : deliveries) deliver(l, delivery);
  }
}

void Fleet::deliver(int l, const Delivery& d) {
  auto& link = links_[static_cast<std::size_t>(l)];
  ++counters_.received;
  if (!link.node) {
    handle(link.actors.front(), d.message);
    return;
  }
  const auto slot = slot_of(d.envelope);
  if (!slot || *slot >= static_cast<int>(link.actors.size())) driver_.fail("the driver sent a node an unknown envelope");
  if (*slot < 0) {
    handle_node(l, d.message);
  } else {
    handle(link.actors[static_cast<std::size_t>(*slot)], d.message);
  }
}

void Fleet::handle(int i, const proto::Message& message) {
  auto& a = actors_[static_cast<std::size_t>(i)];
  if (auto* welcome = std::get_if<proto::Welcome>(&message)) {
    if (a.welcomed) return;  // the answer to a Hello said again
    a.id = welcome->actor_id;
    a.welcomed = true;
    links_[static_cast<std::size_t>(a.link)].redial->heard();
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
  if (a.idle && a.idle_since.time_since_epoch().count() != 0) {
    const double gap = seconds(now - a.idle_since);
    idle_gaps_.push_back(gap);
    // The wait after an actor's first job: every first job ends at once, so these waits are
    // the first wave's, which the loop answers one report after another.
    if (!a.waited) first_job_idle_seconds_ += gap;
    a.waited = true;
  }
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
  for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
    auto& link = links_[static_cast<std::size_t>(l)];
    if (!link.node) continue;
    // A node redials for all of its actors; they say Hello again when the driver asks them.
    // Once welcomed, it looks at its connection once a heartbeat, not at every sweep: the look
    // reads the socket's events, 12,500 times a second over 1,250 nodes.
    if (link.node_id < 0 || now >= link.next_redial_check) {
      const bool redialled = link.redial->step(link.socket, now);
      recheck_after_events(l);
      link.next_redial_check = now + std::chrono::duration_cast<Clock::duration>(period);
      if (link.node_id < 0 && (redialled || (!link.redial->waiting() && now >= link.next_hello))) say_node_hello(l);
    }
    if (link.node_id >= 0 && now - link.last_sent >= period) {
      if (try_send(link, envelope_of(-1), proto::Heartbeat{})) ++counters_.sent;
      link.last_sent = now;
      ++counters_.heartbeats_sent;
      // A send may take the socket's pending read signal: its ZMQ_EVENTS must be read again.
      rechecks_.push_back(l);
    }
  }
  // Behind a node, what its relay passes on (node/node_relay.hpp): an actor's heartbeat only
  // once the driver has heard nothing of it for a third of actor_timeout_seconds, which
  // load_bench's config leaves at the driver's default, 60 s.
  const auto relayed_period = std::max<std::chrono::duration<double>>(period, std::chrono::duration<double>(60.0 / 3));
  for (int i = 0; i < options_.actors; ++i) {
    auto& a = actors_[static_cast<std::size_t>(i)];
    auto& link = links_[static_cast<std::size_t>(a.link)];
    if (!a.welcomed) {
      if (link.node && link.node_id < 0) continue;  // its node's Hello first
      const bool redialled = !link.node && link.redial->step(link.socket, now);
      if (!link.node) recheck_after_events(a.link);
      if (redialled || (!link.redial->waiting() && now >= a.next_hello)) say_hello(i);
    } else if (now - a.last_sent >= (link.node ? relayed_period : period)) {
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
