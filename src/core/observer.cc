#include "npumem/observer.h"

namespace npumem {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::alloc:
      return "alloc";
    case EventKind::free:
      return "free";
    case EventKind::segment_alloc:
      return "segment_alloc";
    case EventKind::segment_free:
      return "segment_free";
    case EventKind::map:
      return "map";
    case EventKind::unmap:
      return "unmap";
    case EventKind::spill:
      return "spill";
    case EventKind::reclaim:
      return "reclaim";
    case EventKind::oom:
      return "oom";
    case EventKind::iteration:
      return "iteration";
  }
  return "unknown";
}

}  // namespace npumem
