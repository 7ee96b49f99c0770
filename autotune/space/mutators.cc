// The mutators: tile sizes (a prime factor moves between two levels of a sample_perfect_tile
// decision) and categorical choices (another candidate), and the tile-size neighbours of the
// local search.
#include <algorithm>

#include "autotune/space/space_parts.h"

namespace kiln::autotune {

namespace {

using schedule::Instruction;
using schedule::Json;

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      if (out.empty() || out.back() != p) out.push_back(p);
      n /= p;
    }
  }
  if (n > 1 && (out.empty() || out.back() != n)) out.push_back(n);
  return out;
}

bool is_tile(const Instruction& inst) {
  return inst.kind == "sample_perfect_tile" && inst.decision.is_array();
}

// The decision with prime `p` moved from level `from` to level `to`, if the innermost level
// stays within the instruction's limit.
bool move_factor(const Instruction& inst, size_t from, size_t to, int64_t p, Json* out) {
  std::vector<int64_t> factors = inst.decision.get<std::vector<int64_t>>();
  if (factors[from] % p != 0) return false;
  factors[from] /= p;
  factors[to] *= p;
  int64_t max_inner = inst.attrs.value("max_innermost_factor", int64_t{0});
  if (max_inner > 0 && factors.back() > max_inner) return false;
  *out = factors;
  return true;
}

class MutateTileSize : public Mutator {
 public:
  const char* name() const override { return "mutate_tile_size"; }

  bool propose(const schedule::Trace& trace, std::mt19937_64& rng, size_t* index,
               Json* decision) const override {
    std::vector<size_t> tiles;
    for (size_t i = 0; i < trace.instructions().size(); ++i) {
      if (is_tile(trace.instructions()[i])) tiles.push_back(i);
    }
    for (int attempt = 0; attempt < 16 && !tiles.empty(); ++attempt) {
      size_t i = tiles[rng() % tiles.size()];
      const Instruction& inst = trace.instructions()[i];
      std::vector<int64_t> factors = inst.decision.get<std::vector<int64_t>>();
      if (factors.size() < 2) continue;
      size_t from = rng() % factors.size();
      size_t to = rng() % (factors.size() - 1);
      if (to >= from) ++to;
      std::vector<int64_t> primes = prime_factors(factors[from]);
      if (primes.empty()) continue;
      if (move_factor(inst, from, to, primes[rng() % primes.size()], decision)) {
        *index = i;
        return true;
      }
    }
    return false;
  }
};

class MutateCategorical : public Mutator {
 public:
  const char* name() const override { return "mutate_categorical"; }

  bool propose(const schedule::Trace& trace, std::mt19937_64& rng, size_t* index,
               Json* decision) const override {
    std::vector<size_t> choices;
    for (size_t i = 0; i < trace.instructions().size(); ++i) {
      const Instruction& inst = trace.instructions()[i];
      if (inst.kind == "sample_categorical" && inst.decision.is_number_integer() &&
          inst.attrs.at("candidates").size() > 1) {
        choices.push_back(i);
      }
    }
    if (choices.empty()) return false;
    size_t i = choices[rng() % choices.size()];
    const Instruction& inst = trace.instructions()[i];
    int64_t count = static_cast<int64_t>(inst.attrs.at("candidates").size());
    int64_t current = inst.decision.get<int64_t>();
    int64_t next = static_cast<int64_t>(rng() % static_cast<uint64_t>(count - 1));
    if (next >= current) ++next;
    *index = i;
    *decision = next;
    return true;
  }
};

}  // namespace

std::unique_ptr<Mutator> make_mutate_tile_size(const SpaceContext&) {
  return std::make_unique<MutateTileSize>();
}

std::unique_ptr<Mutator> make_mutate_categorical(const SpaceContext&) {
  return std::make_unique<MutateCategorical>();
}

std::vector<std::pair<size_t, Json>> tile_size_neighbours(const schedule::Trace& trace) {
  std::vector<std::pair<size_t, Json>> out;
  for (size_t i = 0; i < trace.instructions().size(); ++i) {
    const Instruction& inst = trace.instructions()[i];
    if (!is_tile(inst)) continue;
    std::vector<int64_t> factors = inst.decision.get<std::vector<int64_t>>();
    for (size_t from = 0; from < factors.size(); ++from) {
      for (int64_t p : prime_factors(factors[from])) {
        for (size_t to = 0; to < factors.size(); ++to) {
          Json decision;
          if (to != from && move_factor(inst, from, to, p, &decision)) {
            out.emplace_back(i, decision);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace kiln::autotune
