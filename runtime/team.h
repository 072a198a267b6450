// team.h - helper teams (MPI 12.4.4 draft): user threads lent to libep while they wait.
//
// What it is: a Team is a set of up to `maxsize` user threads.  A thread joins
// (EP_Team_join) and later leaves (EP_Team_leave: waits until every member left or
// broke), breaks (EP_Team_break: departs without waiting; refused on a `balanced`
// team) or syncs (EP_Team_sync: a barrier of the members, i.e. leave then join).
// Members go through *epochs*: an epoch opens when the first thread joins an empty
// team (fixing teamsize = min(teamsize, maxsize)) and closes when `teamsize` members
// joined and all of them departed; the members that were syncing form the next epoch
// at once, otherwise the team is empty and may be joined again.
//
// Helping.  A member waiting in leave/sync is a *helper*: until its epoch closes it
//   - takes chunks of the HelpJobs that other members of the team posted
//     (team_parallel_for: the combine, pack, unpack and copy steps of large
//     reductions started by a member, collectives/reduce_util.h), and
//   - runs progress passes of the engine (Engine::try_progress, if no other thread
//     holds the baton), so pending point-to-point of the process advances on its core;
// between jobs it backs off (progress::Backoff: spin, yield, then timed sleeps on the
// team's condition variable, from which posting a job wakes it at once; a pass is run
// after every pause, so progress continues at the back-off's pace while it sleeps).
// The poster works on its own job too and returns when every chunk is done.  Whether
// team_parallel_for posts at all is TeamShare: with a member already waiting, or (for
// steps the caller would otherwise do alone) with other members joined that will reach
// leave/sync during the job; otherwise it declines and the caller takes its ordinary
// path (oneTBB for combining, one thread for copies).
//
// Lifetime: the handle holds one reference, every member one more (from its join until
// its leave/break returns) and every collective operation started by a member one
// (collectives/engine.h OpArgs::team); the object is deleted with the last.
// EP_Team_free refuses while members are joined or still waiting inside leave/sync.
//
// Threading: every method is thread-safe; membership state is guarded by mu_.  A
// thread belongs to at most one team (thread_local current team).
//
// Memory ordering: epochs are ordered by mu_ (a leaver sees the epoch it waited for
// change under mu_).  Job chunks: a worker's writes of a chunk happen before its
// release increment of HelpJob::done; the poster's acquire load that sees done ==
// chunks makes them visible to it; HelpJob::users counts helpers still touching the
// job (incremented under mu_, release decrement, acquire load by the poster) so the
// poster's stack frame outlives them.
#ifndef EP_RUNTIME_TEAM_H_
#define EP_RUNTIME_TEAM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

#include "runtime/wait.h"

namespace ep::runtime {

// One batch of independent chunks: fn(begin, end) over [0, n) in pieces of `grain`.
struct HelpJob {
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int64_t grain = 1;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0};  // relaxed claims: each chunk index goes to one worker
  std::atomic<int64_t> done{0};  // release per finished chunk; acquire by the poster
  std::atomic<int> users{0};     // helpers holding the job (see Memory ordering)
};

class Team {
 public:
  static constexpr uint32_t kMagic = 0x7ea70b5e;
  // First, as in every handle object (api/entry.h, handle validation); 0 once freed.
  uint32_t magic = kMagic;

  Team(int maxsize, bool balanced) : maxsize_(maxsize), balanced_(balanced) {}

  // EP_Team_* semantics; `call` names the API call in error messages.
  int join(int teamsize, const char* call);
  int leave(const char* call);
  int sync(const char* call);
  int brk(const char* call);
  // EP_Team_free: EP_ERR_TEAM while members are joined; else drops the handle's ref.
  int release_handle(const char* call);

  bool balanced() const { return balanced_; }
  int maxsize() const { return maxsize_; }
  // Members waiting in leave/sync, ready to take job chunks (a hint).
  int helpers() const { return helpers_.load(std::memory_order_relaxed); }  // relaxed: hint
  // Members joined in the open epoch that have not departed, not counting the caller.
  int other_members();
  // Posts `job`, works on it, returns when all its chunks are done and no helper holds it.
  void run_job(HelpJob& job);

  // Counters for tests and benchmarks: job chunks run by helpers (not by posters) and
  // progress passes that made progress on helpers.
  uint64_t helped_chunks() const { return helped_chunks_.load(std::memory_order_relaxed); }
  uint64_t helped_passes() const { return helped_passes_.load(std::memory_order_relaxed); }

  void ref() { refs_.fetch_add(1, std::memory_order_relaxed); }  // relaxed: a holder exists
  void unref();

 private:
  // Departs the calling member (under mu_); closes the epoch if it was the last.
  void depart_locked(bool syncing);
  // Helps until the epoch `epoch` closed.
  void help_until_closed(uint64_t epoch);
  // The first job with unclaimed chunks, with a user's reference taken; or nullptr.
  HelpJob* claim_locked();
  bool has_job_locked() const;
  // Runs unclaimed chunks of `job`; returns how many.
  static int64_t work_on(HelpJob& job);

  const int maxsize_;
  const bool balanced_;
  std::mutex mu_;
  Event changed_;                // notified: an epoch closed, a job was posted, a helper
                                 // finished a chunk or let go of a job
  int size_ = 0;                 // teamsize of the open epoch; 0: no epoch (empty team)
  int joined_ = 0;               // members of the open epoch so far
  int departed_ = 0;             // of them, those that left, broke or synced
  int syncing_ = 0;              // of the departed, those that rejoin the next epoch
  int waiting_ = 0;              // of the departed, those waiting in leave/sync
  uint64_t epoch_ = 0;           // number of closed epochs
  std::deque<HelpJob*> jobs_;    // posted jobs with unclaimed chunks, guarded by mu_
  std::atomic<int> helpers_{0};  // threads in help_until_closed
  std::atomic<int> refs_{1};
  // relaxed: statistics only.
  std::atomic<uint64_t> helped_chunks_{0}, helped_passes_{0};
};

// The team the calling thread joined, or nullptr.
Team* current_team();

// When team_parallel_for posts a job.
enum class TeamShare {
  kIfWaiting,  // only if a member already waits in leave/sync (else the caller's own
               // parallel path is better)
  kIfJoined,   // also if other members are joined: they are expected in leave/sync
               // soon and take the chunks left (for steps the caller would do alone)
};

// Runs fn over [0, n) in chunks of `grain` elements, sharing the chunks with the
// helpers waiting in `team`.  Returns false without running anything when there is
// no team, only one chunk or no helper to expect (see TeamShare): the caller then does
// the work its own way.  Thread-safe.
bool team_parallel_for(Team* team, int64_t n, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn,
                       TeamShare share = TeamShare::kIfWaiting);

}  // namespace ep::runtime

#endif  // EP_RUNTIME_TEAM_H_
