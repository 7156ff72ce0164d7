// VisitEvery: std::visit over a variant with one handler per alternative,
// checked when it compiles. Every executor of a decider's actions (and every
// shell that feeds a decider its events) goes through it, so that a new
// action type without a handler is a compile error, never an action dropped
// in silence.
//
//   VisitEvery(action,
//              [&](const StartWorkers& start) { ... },
//              [&](const StopWorkers& stop) { ... });
//
// It refuses to compile (static_assert, naming the rule) when
//   - an alternative of the variant has no handler, or
//   - a handler takes anything (a generic `auto` lambda, a template, a
//     parameter of a type every action converts to): such a catch-all would
//     take the next new action as silently as a chain of get_if did.
// tests/compile_fail/ checks both. A handler may name several alternatives
// at once with OneOf (below): it takes those and no other, so it is no
// catch-all.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>

namespace muster {

// One callable made of several lambdas.
template <typename... Handlers>
struct Overloaded : Handlers... {
  using Handlers::operator()...;
};
template <typename... Handlers>
Overloaded(Handlers...) -> Overloaded<Handlers...>;

// The type of a handler's parameter that names several alternatives:
//   [](const OneOf<HeartbeatAck, StatusReply> auto&) { /* nothing to do */ }
// A new alternative still needs a handler, or its name added to such a list.
template <typename T, typename... Alternatives>
concept OneOf = (std::is_same_v<T, Alternatives> || ...);

namespace exhaustive_visit_detail {

// Whether `Handlers` takes each alternative of `Variant` as std::visit
// passes it (with the variant's const and reference kind).
template <typename Handlers, typename Variant, std::size_t... Index>
constexpr bool HandlesEvery(std::index_sequence<Index...>) {
  return (std::is_invocable_v<Handlers, decltype(std::get<Index>(std::declval<Variant>()))> && ...);
}

// A type no handler names: a set of handlers that takes it takes anything.
struct NoActionOfOurs {};

}  // namespace exhaustive_visit_detail

template <typename Variant, typename... Handlers>
decltype(auto) VisitEvery(Variant&& variant, Handlers&&... handlers) {
  using Set = Overloaded<std::decay_t<Handlers>...>;
  static_assert(exhaustive_visit_detail::HandlesEvery<Set, Variant>(
                    std::make_index_sequence<std::variant_size_v<std::decay_t<Variant>>>()),
                "VisitEvery: an alternative of the variant has no handler");
  static_assert(!std::is_invocable_v<Set, exhaustive_visit_detail::NoActionOfOurs&>,
                "VisitEvery: a handler takes any type; name each alternative instead");
  return std::visit(Set{std::forward<Handlers>(handlers)...}, std::forward<Variant>(variant));
}

}  // namespace muster
