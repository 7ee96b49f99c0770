// ModularSet: what an integer expression is modulo a constant, e = coeff * k + base for some
// integer k. Computed by Analyzer; used to decide divisibility in the simplifier.
#pragma once

#include <cstdint>
#include <iosfwd>

namespace kiln::arith {

// Every value of the expression is coeff * k + base for some integer k. coeff >= 0; when
// coeff > 0, 0 <= base < coeff. coeff == 0 means the expression is exactly `base`; coeff == 1
// (base 0) says nothing.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;

  // The set that says nothing.
  static ModularSet everything() { return {1, 0}; }
  // The set of one constant.
  static ModularSet constant(int64_t value) { return {0, value}; }

  bool is_everything() const { return coeff == 1; }
  bool operator==(const ModularSet& other) const {
    return coeff == other.coeff && base == other.base;
  }
  bool operator!=(const ModularSet& other) const { return !(*this == other); }
};

// Prints "{coeff * k + base}".
std::ostream& operator<<(std::ostream& os, const ModularSet& set);

}  // namespace kiln::arith
