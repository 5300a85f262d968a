// An object's JSON text cut down to named members before it is parsed: a
// projection (store.h) that keeps a few members of a large object (a Job's
// Pod template, a Pod's spec) otherwise parses the whole text into a tree
// only to throw most of it away. The cut copies the kept members' text and
// skips the rest without building anything; the projection still runs on
// what is parsed, so a cut only has to keep everything the projection (and
// whatever reads the object before it) reads.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace hb::kube {

struct TextCut {
  struct Member;
  // The members kept, by name. A member with a cut of its own keeps only
  // those members of its value when that value is an object; one with none
  // keeps its value whole.
  std::vector<Member> members;

  TextCut() = default;
  TextCut(std::initializer_list<Member> kept);
  // The cut for `name`, or null when the member is not kept.
  const TextCut* find(std::string_view name) const;
};

struct TextCut::Member {
  std::string name;
  TextCut cut;
};

// `text` (one well-formed JSON value: a scanned watch event's object) with
// only the members `cut` keeps. A member name written with an escape is
// kept whole (it may be a kept name); text that is not an object, or that
// does not read as JSON, is returned whole (the parse then says what is
// wrong with it).
std::string cut_text(std::string_view text, const TextCut& cut);

}  // namespace hb::kube
