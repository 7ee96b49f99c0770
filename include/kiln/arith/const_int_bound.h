// ConstIntBound: a constant interval [min_value, max_value] that holds every value an integer
// expression can take, with sentinels for an unbounded side. Computed by Analyzer.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <limits>

namespace kiln::arith {

// Every value v of the expression satisfies min_value <= v <= max_value. kNegInf / kPosInf
// stand for "no bound on this side" (they are also the limits of int64, so an int64 expression
// without information has the bound [kNegInf, kPosInf]).
struct ConstIntBound {
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();

  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;

  // The bound that says nothing.
  static ConstIntBound everything() { return {kNegInf, kPosInf}; }
  // The bound of a constant.
  static ConstIntBound single(int64_t value) { return {value, value}; }

  bool is_single() const { return min_value == max_value; }
  bool is_everything() const { return min_value == kNegInf && max_value == kPosInf; }
  bool operator==(const ConstIntBound& other) const {
    return min_value == other.min_value && max_value == other.max_value;
  }
  bool operator!=(const ConstIntBound& other) const { return !(*this == other); }
};

// Prints "[min, max]" with -inf / +inf for the sentinels.
std::ostream& operator<<(std::ostream& os, const ConstIntBound& bound);

}  // namespace kiln::arith
