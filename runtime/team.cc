#include "runtime/team.h"


#include <algorithm>

#include "base/types.h"
#include "runtime/error.h"
#include "runtime/runtime.h"

namespace ep::runtime {
namespace {
thread_local Team* t_team = nullptr;  // the team this thread joined
}  // namespace

Team* current_team() { return t_team; }

void Team::unref() {
  // acq_rel: the last holder sees every other holder's use before deleting.
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

int Team::join(int teamsize, const char* call) {
  if (t_team != nullptr) {
    return fail(EP_ERR_TEAM, call,
                "the calling thread already belongs to a team (leave or break it first)");
  }
  if (teamsize < 1) return fail(EP_ERR_ARG, call, "teamsize %d is below 1", teamsize);
  const int want = std::min(teamsize, maxsize_);
  std::lock_guard<std::mutex> lock(mu_);
  if (size_ == 0) {
    size_ = want;  // the first member opens an epoch
  } else if (want != size_) {
    return fail(EP_ERR_ARG, call,
                "teamsize %d (capped at maxsize %d) differs from the %d of "
                "the members that joined before",
                teamsize, maxsize_, size_);
  }
  if (joined_ == size_) {
    return fail(EP_ERR_TEAM, call, "the team already has its %d members", size_);
  }
  ++joined_;
  ref();  // the member's reference, dropped when it leaves or breaks
  t_team = this;
  return EP_SUCCESS;
}

void Team::depart_locked(bool syncing) {
  ++departed_;
  if (syncing) ++syncing_;
  if (departed_ < size_) return;
  // Every member joined and departed: the epoch closes; the syncing members form the
  // next one at once.
  ++epoch_;
  if (syncing_ > 0) {
    joined_ = syncing_;
  } else {
    size_ = 0;
    joined_ = 0;
  }
  departed_ = 0;
  syncing_ = 0;
  waiting_ = 0;
  changed_.notify();
}

int Team::leave(const char* call) {
  if (t_team != this) {
    return fail(EP_ERR_TEAM, call, "the calling thread is not a member of this team");
  }
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = epoch_;
    ++waiting_;
    depart_locked(false);
  }
  t_team = nullptr;
  help_until_closed(epoch);
  unref();  // the member's reference
  return EP_SUCCESS;
}

int Team::sync(const char* call) {
  if (t_team != this) {
    return fail(EP_ERR_TEAM, call, "the calling thread is not a member of this team");
  }
  uint64_t epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch = epoch_;
    ++waiting_;
    depart_locked(true);
  }
  help_until_closed(epoch);  // then we are a member of the next epoch
  return EP_SUCCESS;
}

int Team::brk(const char* call) {
  if (t_team != this) {
    return fail(EP_ERR_TEAM, call, "the calling thread is not a member of this team");
  }
  if (balanced_) {
    return fail(EP_ERR_TEAM, call,
                "the team was created with info \"balanced\" = \"true\": members must leave");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    depart_locked(false);
  }
  t_team = nullptr;
  unref();  // the member's reference
  return EP_SUCCESS;
}

int Team::release_handle(const char* call) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int members = joined_ - departed_ + waiting_;
    if (members > 0) {
      return fail(EP_ERR_TEAM, call, "%d member(s) of the team have not left or broken it yet",
                  members);
    }
    magic = 0;
  }
  unref();  // the handle's reference
  return EP_SUCCESS;
}

int64_t Team::work_on(HelpJob& job) {
  for (int64_t ran = 0;; ++ran) {
    // relaxed: the counter only hands out distinct chunk indices.
    const int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.chunks) return ran;
    const int64_t b = c * job.grain;
    (*job.fn)(b, std::min(job.n, b + job.grain));
    job.done.fetch_add(1, std::memory_order_release);  // pairs: acquire in run_job()
  }
}

void Team::help_until_closed(uint64_t epoch) {
  helpers_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a hint for posters
  for (;;) {
    HelpJob* job = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (epoch_ != epoch) break;
      job = claim_locked();
    }
    if (job != nullptr) {
      const int64_t ran = work_on(*job);
      helped_chunks_.fetch_add(static_cast<uint64_t>(ran), std::memory_order_relaxed);  // stats
      job->users.fetch_sub(1, std::memory_order_release);  // pairs: acquire in run_job()
      changed_.notify();  // run_job may wait for us
      continue;
    }
    // No job: wait for one or for the epoch's end (runtime/wait.h), progressing the
    // process's pending point-to-point and collective schedules while we spin.
    wait_until(
        changed_,
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return epoch_ != epoch || has_job_locked();
        },
        Drive::kYes);
  }
  helpers_.fetch_sub(1, std::memory_order_relaxed);  // relaxed: a hint
}

HelpJob* Team::claim_locked() {
  // Jobs whose chunks are all claimed need nobody else: drop them from the queue.
  // relaxed: a stale value only makes us look at a job once more.
  while (!jobs_.empty() &&
         jobs_.front()->next.load(std::memory_order_relaxed) >= jobs_.front()->chunks) {
    jobs_.pop_front();
  }
  if (jobs_.empty()) return nullptr;
  HelpJob* job = jobs_.front();
  // relaxed: mu_ orders it before the poster's removal and its acquire load.
  job->users.fetch_add(1, std::memory_order_relaxed);
  return job;
}

bool Team::has_job_locked() const {
  for (const HelpJob* j : jobs_) {
    if (j->next.load(std::memory_order_relaxed) < j->chunks) return true;  // relaxed: a hint
  }
  return false;
}

void Team::run_job(HelpJob& job) {
  job.chunks = (job.n + job.grain - 1) / job.grain;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(&job);
  }
  changed_.notify();
  work_on(job);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(jobs_.begin(), jobs_.end(), &job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  // The last chunks may still run on helpers (at most one chunk each), which may need
  // our core: wait (runtime/wait.h) until every chunk is done and no helper holds the
  // job.  acquire: pairs with the release increments in work_on() and the release
  // decrement of users in help_until_closed(), each followed by a notify.
  wait_until(changed_, [&job] {
    return job.done.load(std::memory_order_acquire) == job.chunks &&
           job.users.load(std::memory_order_acquire) == 0;
  });
}

int Team::other_members() {
  std::lock_guard<std::mutex> lock(mu_);
  return joined_ - departed_ - (t_team == this ? 1 : 0);
}

bool team_parallel_for(Team* team, int64_t n, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn, TeamShare share) {
  if (team == nullptr || grain < 1 || n <= grain) return false;
  if (team->helpers() == 0 && (share == TeamShare::kIfWaiting || team->other_members() <= 0)) {
    return false;
  }
  HelpJob job;
  job.fn = &fn;
  job.n = n;
  job.grain = grain;
  team->run_job(job);
  return true;
}

}  // namespace ep::runtime
