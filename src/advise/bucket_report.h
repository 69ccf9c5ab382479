// How `npumem advise buckets` shows a BucketAdvice: one JSON object, or a table with
// each bucketing's buckets under it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bucket_advisor.h"

namespace npumem::cli {

// Keys in reading order; "choices" has one object per k up to the number of shapes,
// `possible` false where k is below the number of families.
nlohmann::ordered_json bucket_advice_json(const BucketAdvice& advice);

// Sizes via format_bytes; ends with a newline.
std::string bucket_advice_text(const BucketAdvice& advice);

}  // namespace npumem::cli
