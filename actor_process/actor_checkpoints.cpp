#include "actor_process/actor.hpp"

#include <sys/statvfs.h>

#include <filesystem>
#include <fstream>

#include "actor_process/logging.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/zmq_channel.hpp"
#include "spec/checkpoint_name.hpp"
#include "util/work_folder.hpp"

namespace packtune::actor_process {

namespace proto = protocol;

void Actor::open_checkpoint_store() {
  if (spec_.checkpoint_dir.empty()) return;
  std::ifstream in(spec_.checkpoint_dir + "/.store");
  std::string token;
  if (in >> token && token == spec_.store_token) {
    local_checkpoints_ = spec_.checkpoint_dir;
    return;
  }
  const std::string work = options_.work_dir.empty() ? util::fresh_work_dir("actor") : options_.work_dir;
  owned_work_dir_ = options_.work_dir.empty() ? work : "";
  local_checkpoints_ = work + "/checkpoints";
  std::filesystem::create_directories(local_checkpoints_);
  std::unique_ptr<CurveKeys> keys;
  if (!options_.keys.empty()) keys = std::make_unique<CurveKeys>(load_actor_keys(options_.keys));
  transfer_ = std::make_unique<TransferClient>(options_.driver, keys.get(), TransferOptions{});
  transfer_->set_token(transfer_token_);
  logging::info("actor {}: the driver's checkpoint store {} is not on this machine; checkpoints travel over "
                "ZeroMQ through {}", id_, spec_.checkpoint_dir, local_checkpoints_);
}

void Actor::checkpoint_long_jobs(const actors::PackExecutor& pack) {
  if (!(spec_.checkpoint_every_seconds > 0) || local_checkpoints_.empty()) return;
  const auto now = Clock::now();
  const auto every = std::chrono::duration<double>(spec_.checkpoint_every_seconds);
  for (auto& [trial, lease] : leases_) {
    auto [since, fresh] = last_saved_.try_emplace(trial, now);
    if (fresh || now - since->second < every) continue;
    since->second = now;
    auto checkpoint = pack.checkpoint_now(trial);
    if (!checkpoint) continue;
    PendingSave pending;
    pending.report.trial = trial;
    pending.report.lease = lease;
    pending.report.budget = checkpoint->budget;
    pending.inside_job = true;
    pending.path = std::async(std::launch::async, [this, checkpoint] { return save(*checkpoint); });
    saves_.push_back(std::move(pending));
  }
}

Actor::Saved Actor::save(const actors::TrialCheckpoint& checkpoint) const {
  const auto path = spec::checkpoint_path(local_checkpoints_, checkpoint.trial, checkpoint.budget);
  try {
    const auto start = Clock::now();
    std::filesystem::create_directories(local_checkpoints_);
    actors::write_checkpoint(path, checkpoint, /*durable=*/!transfer_);
    const double written = std::chrono::duration<double>(Clock::now() - start).count();
    const double mib = static_cast<double>(checkpoint.bytes()) / (1 << 20);
    if (!transfer_) {
      logging::info("actor {}: trial {} checkpoint at budget {:g}: {} ({:.1f} MiB in {:.2f} s)", id_,
                    checkpoint.trial, checkpoint.budget, path, mib, written);
      return {path};
    }
    const auto sent = Clock::now();
    std::string stored;
    try {
      stored = transfer_->upload(path, std::filesystem::path(path).filename().string()).get();
    } catch (...) {
      std::error_code ec;
      std::filesystem::remove(path, ec);
      throw;
    }
    std::error_code ec;
    std::filesystem::remove(path, ec);
    logging::info("actor {}: trial {} checkpoint at budget {:g}: {} ({:.1f} MiB written in {:.2f} s, sent to the "
                  "driver in {:.2f} s)", id_, checkpoint.trial, checkpoint.budget, stored, mib, written,
                  std::chrono::duration<double>(Clock::now() - sent).count());
    return {stored};
  } catch (const std::exception& e) {
    logging::warn("actor {}: trial {}: cannot write its checkpoint: {}", id_, checkpoint.trial, e.what());
    // HDF5's messages do not say ENOSPC; the file system does.
    struct statvfs fs {};
    const auto needs = checkpoint.bytes() + (std::int64_t{1} << 20);
    if (::statvfs(local_checkpoints_.c_str(), &fs) == 0 &&
        static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize) < needs) {
      return {"", fmt::format("no space left on the disk of {} for trial {}'s checkpoint ({} MiB free, it needs {} MiB)",
                              local_checkpoints_, checkpoint.trial,
                              static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize) >> 20,
                              needs >> 20),
              true};
    }
    return {"", e.what()};
  }
}

bool Actor::send_saved(bool wait) {
  bool sent = false;
  while (!saves_.empty() &&
         (wait || saves_.front().path.wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
    auto& front = saves_.front();
    const Saved saved = front.path.get();
    if (front.inside_job) {
      // A checkpoint that failed inside a job costs only the restart it would have shortened.
      if (!saved.path.empty()) {
        send_message(socket_, proto::Checkpointed{front.report.trial, front.report.lease, saved.path,
                                                  front.report.budget});
        test_hold("actor.checkpoint_inside");
      }
      saves_.pop_front();
      sent = true;
      continue;
    }
    front.report.checkpoint = saved.path;
    front.report.checkpoint_error = saved.error;
    front.report.disk_full = saved.disk_full;
    send_message(socket_, front.report);
    saves_.pop_front();
    sent = true;
  }
  return sent;
}

actors::TrialCheckpoint Actor::read_from_store(const std::string& path) {
  if (!transfer_) return actors::read_checkpoint(path);
  const auto name = std::filesystem::path(path).filename().string();
  auto fetched = transfer_->fetch(name, local_checkpoints_ + "/test-" + name, {});
  if (fetched.wait_for(std::chrono::minutes(5)) != std::future_status::ready) {
    throw Error("checkpoint " + name + ": not fetched from the driver within 5 minutes");
  }
  const auto local = fetched.get();
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } remove{local};
  return actors::read_checkpoint(local);
}

bool Actor::advance_resume(actors::PackExecutor& pack, Resume& r) {
  while (true) {
    if (r.fetch.valid()) {
      if (r.fetch.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
      try {
        if (try_resume(pack, r, r.fetch.get())) return true;
      } catch (const Error& e) {
        give_up_checkpoint(r, e.what());
      }
      continue;
    }
    if (r.next >= r.paths.size()) {
      r.job.resume.reset();
      pack.add(r.job);
      start_budget_[r.job.trial] = 0;
      return true;
    }
    const auto& path = r.paths[r.next++];
    if (!transfer_) {
      if (try_resume(pack, r, path)) return true;
      continue;
    }
    const auto name = std::filesystem::path(path).filename().string();
    r.asked = Clock::now();
    r.loaded = std::make_shared<std::shared_ptr<const actors::TrialCheckpoint>>();
    r.fetch = transfer_->fetch(name, local_checkpoints_ + "/fetched-" + name,
                               [loaded = r.loaded](const std::string& path) {
                                 *loaded = std::make_shared<const actors::TrialCheckpoint>(actors::read_checkpoint(path));
                               });
  }
}

bool Actor::try_resume(actors::PackExecutor& pack, Resume& r, const std::string& file) {
  const auto& source = r.paths[r.next - 1];
  std::error_code ec;
  try {
    auto checkpoint = file != source && r.loaded && *r.loaded
                          ? std::move(*r.loaded)
                          : std::make_shared<const actors::TrialCheckpoint>(actors::read_checkpoint(file));
    if (file != source) std::filesystem::remove(file, ec);
    if (checkpoint->trial != r.job.trial) {
      throw InputError("checkpoint " + source + ": belongs to trial " + std::to_string(checkpoint->trial));
    }
    r.job.resume = checkpoint;
    pack.add(r.job);
    start_budget_[r.job.trial] = checkpoint->budget;
    logging::info("actor {}: trial {} resumed from {} (budget {:g}, step {}){}", id_, r.job.trial, source,
                  checkpoint->budget, checkpoint->step,
                  file == source ? std::string()
                                 : fmt::format(", fetched from the driver in {:.2f} s",
                                               std::chrono::duration<double>(Clock::now() - r.asked).count()));
    return true;
  } catch (const Error& e) {
    if (file != source) std::filesystem::remove(file, ec);
    give_up_checkpoint(r, e.what());
    return false;
  }
}

void Actor::give_up_checkpoint(Resume& r, const std::string& why) {
  r.job.resume.reset();
  logging::warn("actor {}: trial {} cannot resume: {}; {}", id_, r.job.trial, why,
                r.next < r.paths.size() ? "trying its previous checkpoint" : "training it from scratch");
}

void Actor::advance_resumes(actors::PackExecutor& pack) {
  for (auto it = resumes_.begin(); it != resumes_.end();) {
    bool done = true;
    try {
      done = advance_resume(pack, *it);
    } catch (const std::exception& e) {
      send_message(socket_, proto::TrialFailed{it->job.trial, actors::error_message(e), lease_of(it->job.trial, true)});
    }
    it = done ? resumes_.erase(it) : std::next(it);
  }
}

Actor::~Actor() {
  saves_.clear();  // their uploads need transfer_, which goes first
  resumes_.clear();
  transfer_.reset();
  std::error_code ec;
  if (!owned_work_dir_.empty()) std::filesystem::remove_all(owned_work_dir_, ec);
}

}  // namespace packtune::actor_process
