// Per-process stats pages for `npumem smi` and `npumem mon`: a publisher copies the
// stats of registered allocators into a small shared-memory page
// (/dev/shm/npumem.<pid>.<random>) on a timer thread, never on the allocation path;
// readers copy the pages, show those that are plausible and belong to the live
// process they name, and remove this user's pages of processes that have died.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "npumem/allocator.h"

namespace npumem {

inline constexpr std::string_view kStatsPagePrefix = "npumem.";
// The environment variable that, set to 0 (or off, false, no, in any case), keeps a
// process off the stats pages: every publisher of the process asks
// stats_publishing_disabled().
inline constexpr const char* kStatsPageVariable = "NPUMEM_STATS_PAGE";

struct PublishedTier {
  Tier tier = Tier::hbm;
  bool present = false;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
};

// A pool of the allocator (a model's, in a server of several): its own figures.
struct PublishedPool {
  std::string name;
  std::uint64_t quota_bytes = 0;  // 0: none
  std::uint64_t reserved_bytes = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
};

struct PublishedDevice {
  std::string name;                             // "sim:0"
  std::array<PublishedTier, kTierCount> tiers;  // indexed by Tier
  // Of all tiers together (the tiers' peaks came at different times).
  std::uint64_t peak_reserved_bytes = 0;
  std::uint64_t peak_allocated_bytes = 0;
  std::uint64_t num_ooms = 0;
  std::uint64_t num_alloc_retries = 0;
  // The allocator's pools, "default" first: the first ones, as many as a page holds (8),
  // and how many it has.
  std::vector<PublishedPool> pools;
  std::uint64_t pool_count = 0;
};

struct ProcessStats {
  int pid = 0;
  std::string process_name;
  std::string page_name;
  std::uint64_t update_count = 0;
  std::int64_t updated_unix_ns = 0;
  std::vector<PublishedDevice> devices;
};

class StatsPublisher {
 public:
  struct Options {
    std::chrono::milliseconds interval{250};
    std::string page_name;  // empty: "npumem.<pid>.<16 random hex digits>"
  };

  // Creates the page, its memory reserved up front. Throws Error when the system
  // refuses it (a full /dev/shm): the caller carries on without publishing.
  StatsPublisher();
  explicit StatsPublisher(Options options);
  // Stops the timer and removes the page.
  ~StatsPublisher();
  StatsPublisher(const StatsPublisher&) = delete;
  StatsPublisher& operator=(const StatsPublisher&) = delete;

  // An allocator's place on the page while it lives; ending it frees the place.
  class Registration {
   public:
    Registration() = default;
    Registration(Registration&& other) noexcept;
    Registration& operator=(Registration&& other) noexcept;
    ~Registration();
    // The allocator's figures stay on the page as they are now, and the allocator may
    // die before the registration ends (a finished replay held open for `npumem smi`
    // after its report is printed).
    void freeze();

   private:
    friend class StatsPublisher;
    Registration(StatsPublisher* publisher, std::size_t slot)
        : publisher_(publisher), slot_(slot) {}
    void reset();

    StatsPublisher* publisher_ = nullptr;
    std::size_t slot_ = 0;
  };

  // Publishes `allocator` until the registration ends (before the allocator dies).
  // Throws Error when every device place on the page (8) is taken.
  [[nodiscard]] Registration publish(const Allocator& allocator);
  // Copies the stats now rather than at the next tick.
  void publish_now();
  const std::string& page_name() const { return page_name_; }

 private:
  struct Shared;  // the mapped page (layout in src/observe/page/stats_page_layout.h)

  void unregister(std::size_t slot);
  void freeze(std::size_t slot);
  void run();
  void write_locked();

  const std::chrono::milliseconds interval_;
  std::unique_ptr<Shared> shared_;
  const std::string page_name_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<const Allocator*> allocators_;  // by slot; nullptr when free or frozen
  std::vector<bool> frozen_;                  // by slot: its last figures stay
  std::thread thread_;
};

// How the default page names of this process start: "npumem.<pid>.".
std::string stats_page_prefix_of_this_process();
// kStatsPageVariable's word: unset, empty or an on spelling (1, on, true, yes), an off spelling
// (0, off, false, no), in any case; anything else is unrecognised, and publishes as on.
enum class StatsPageSetting { on, off, unrecognised };
StatsPageSetting stats_page_setting();
// Whether kStatsPageVariable keeps this process off the stats pages.
bool stats_publishing_disabled();

// Reads every page whose name starts with `prefix`, by pid. A page is copied (never
// mapped) and shown only when its owner runs the live process its name and its pid
// field both give and every figure is plausible; names come back with control
// characters and ill-formed UTF-8 escaped. This user's pages of processes that no
// longer exist are removed; other pages are never removed.
std::vector<ProcessStats> read_stats_pages(std::string_view prefix = kStatsPagePrefix);

}  // namespace npumem
