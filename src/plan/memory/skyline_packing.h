// Skyline packing (after the best-fit strip packing heuristic that Sekiyama et al. 2018
// applied to DNN memory): memory is filled bottom-up. The skyline is the top of the placed
// tensors over the ops; at its lowest stretch, the tensor with the highest priority among
// those whose lifetime fits inside the stretch is placed; when none fits, the stretch is
// raised to its lower neighbour (that space is given up).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plan/memory/plan_instance.h"
#include "plan/memory/range_add_max.h"

namespace npumem::plan {

// How a run picks the tensor for the lowest stretch.
enum class Lookahead : std::uint8_t {
  // The highest priority among those that fit.
  none,
  // The same, unless placing it leaves a piece of the stretch beside it that no unplaced
  // tensor fits, and raising that piece would raise the highest final height: then the
  // best of the first few candidates that does not (or that raises it least). Stretches of
  // over 1,024 ops go without.
  stranding,
  // The same, with "the highest final height" read as 1 % below it: the lookahead acts
  // before the ops near the top have reached it.
  stranding_near_top,
};

class SkylinePacker {
 public:
  // live: bytes live at each renumbered op (live_bytes_per_op).
  SkylinePacker(const PlanInstance& instance, std::span<const std::uint64_t> live);

  // Packs every tensor, priorities[i] for tensor i (higher goes first); writes one offset
  // per tensor and returns the arena. Stops early, returning a value >= cutoff, as soon as
  // the arena is sure to reach cutoff; returns kNoFit when an offset would reach 2^64-1.
  //
  // Every op's height ends at the bytes live there plus the space given up below it, so a
  // run is lost as soon as the space given up at one op takes it to the cutoff: most runs
  // of a search stop there, long before their last tensor.
  std::uint64_t pack(std::span<const double> priorities, std::uint64_t cutoff,
                     std::vector<std::uint64_t>& offsets, Lookahead lookahead = Lookahead::none);

 private:
  // A maximal stretch of ops [first, last] over which the skyline has one height.
  struct Stretch {
    std::uint32_t first;
    std::uint32_t last;
    std::uint64_t height;
  };
  // What a run changes as it places tensors (the rest of its state follows from it and
  // the priorities).
  struct RunState {
    std::vector<bool> placed;      // by position in by_first_
    std::vector<Stretch> skyline;  // left to right, covering every op
    // By op: live bytes plus the space given up below so far, the op's final height.
    RangeAddMax final_heights;
    std::uint64_t highest_final = 0;  // the maximum of final_heights
    // Heights never drop, so the least height only rises: every stretch left of
    // scan_from stands above floor, the least height, and a search starts there.
    std::uint64_t floor = 0;
    std::size_t scan_from = 0;
    std::uint64_t arena = 0;
    std::size_t unplaced = 0;
  };

 public:
  // A run's state once all but `unplaced` tensors are placed: the tensors at the plan's
  // top are placed late, so runs resumed from here with other priorities change the top
  // and keep the rest, at a fraction of a whole run's time.
  struct Checkpoint {
    std::size_t unplaced = 0;  // set by the caller
    bool saved = false;
    RunState state;
    std::vector<std::uint64_t> offsets;
  };
  // pack(), which also saves the state into each checkpoint as its `unplaced` tensors are
  // left (when the run gets there: then its `saved` is set; the others' is cleared).
  std::uint64_t pack(std::span<const double> priorities, std::uint64_t cutoff,
                     std::vector<std::uint64_t>& offsets, Lookahead lookahead,
                     std::span<Checkpoint> checkpoints);
  // Finishes the run saved in `from` with these priorities and lookahead for the tensors
  // it left, saving into `checkpoints` (those of fewer tensors left) as pack() does; the
  // same contract as pack(). `from` must not be one of `checkpoints`.
  std::uint64_t resume(const Checkpoint& from, std::span<const double> priorities,
                       std::uint64_t cutoff, std::vector<std::uint64_t>& offsets,
                       Lookahead lookahead, std::span<Checkpoint> checkpoints = {});
  // Steps taken by the runs so far (a tensor placed, a stretch raised, an op indexed):
  // the work the search's clock counts.
  std::uint64_t steps() const { return steps_; }

 private:
  // Sets up the run's priority index (best_upto_, tree_) for state_.placed.
  void index_priorities(std::span<const double> priorities);
  // Places the unplaced tensors (pack's loop), saving into the checkpoints on the way.
  std::uint64_t finish(std::span<const double> priorities, std::uint64_t cutoff,
                       std::vector<std::uint64_t>& offsets, std::span<Checkpoint> checkpoints);

  // The leftmost stretch of least height.
  std::size_t lowest_stretch();
  // How much placing by_first_[position] in stretch `index` would raise a final height
  // above strand_reference() by leaving a piece of the stretch beside it that nothing fits.
  std::uint64_t strands(std::size_t index, std::size_t position,
                        std::span<const double> priorities);
  // The candidate of the stretch that strands least (ties: the better one).
  std::size_t least_stranding_candidate(std::size_t index, std::span<const double> priorities);
  // The highest-priority unplaced tensor whose lifetime lies within the stretch, as a
  // position in by_first_, or kNone. Ties go to the lower position.
  std::size_t best_candidate(const Stretch& stretch, std::span<const double> priorities) const;
  // The best unplaced entry of op's group that ends by `last`, or kNone.
  std::size_t best_in_group(std::uint32_t op, std::uint32_t last) const;
  // Whether position a goes before b (kNone never does).
  bool better(std::size_t a, std::size_t b, std::span<const double> priorities) const {
    if (a == kNone) return false;
    if (b == kNone) return true;
    const double x = priorities[by_first_[a]];
    const double y = priorities[by_first_[b]];
    return x != y ? x > y : a < b;
  }
  // best_candidate over the ops of tree node `node`, which spans ops [low, high]: it
  // improves `best`, skipping every subtree whose best cannot.
  void search_tree(std::size_t node, std::uint32_t low, std::uint32_t high, const Stretch& stretch,
                   std::span<const double> priorities, std::size_t& best) const;
  // Recomputes best_upto_ for the group entries from `position` to the group's end.
  void update_best_upto(std::size_t position, std::uint32_t group,
                        std::span<const double> priorities);
  // Returns the highest final height the raise implies over the stretch (see pack).
  std::uint64_t raise_to_neighbour(std::size_t index);
  void place(std::size_t index, std::uint32_t tensor);
  void merge_equal_neighbours(std::size_t index);

  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  const PlanInstance& instance_;
  // Tensors grouped by first op, each group sorted by last op: a stretch's candidates are
  // a prefix of each group starting inside it, so the best of a group's prefixes, kept up
  // to date as tensors are placed, answers the query in one lookup per op.
  std::vector<std::uint32_t> by_first_;
  std::vector<std::uint32_t> last_by_position_;  // last op of by_first_[i]
  std::vector<std::size_t> group_begin_;  // group of op x: [group_begin_[x], group_begin_[x+1])
  std::vector<std::uint64_t> live_;       // bytes live at each op
  RunState state_;
  std::uint64_t steps_ = 0;
  Lookahead lookahead_ = Lookahead::none;  // the run's
  // What strands() counts a raise above: the highest final height, or with
  // Lookahead::stranding_near_top 1 % below it.
  std::uint64_t strand_reference() const {
    const std::uint64_t highest = state_.highest_final;
    return lookahead_ == Lookahead::stranding_near_top ? highest - highest / 100 : highest;
  }
  // least_stranding_candidate's scratch: the best fitting tensor of each group that has one,
  // and the candidates.
  struct GroupBest {
    std::size_t best;
    std::uint32_t op;
  };
  std::vector<GroupBest> group_bests_;
  std::vector<std::size_t> candidates_;
  // Per run, by position in by_first_: the unplaced entry of highest priority from the group's
  // start up to here, or kNone.
  std::vector<std::size_t> best_upto_;
  // Per run, a tournament tree over the ops (leaves from tree_leaves_): each node holds
  // the best unplaced tensor of its groups, whatever its last op, or kNone. A stretch's
  // best candidate is then found without visiting every op of a wide stretch.
  std::vector<std::size_t> tree_;
  std::size_t tree_leaves_ = 1;
};

}  // namespace npumem::plan
