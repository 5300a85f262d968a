// The informer's cache: the latest copy of each object, kept by a reflector.
// Objects are held as compact JSON text (managedFields stripped), compressed
// against a dictionary taken from the store's first object (compressed_text.h:
// objects of one resource share nearly all their keys and many values, so
// each costs about a quarter of its text); readers get a parsed copy. A projection
// (client-go's SetTransform) cuts each object down to what readers use
// before it is kept, so both the memory and every read's parse shrink.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/compressed_text.h"
#include "kube/stored_objects.h"
#include "kube/text_cut.h"
#include "kube/watch_decoder.h"
#include "kube/watch_scan.h"

namespace hb::kube {

struct StoreHandlers {
  // Called with parsed objects (as projected); each set handler costs a JSON
  // parse per event.
  std::function<void(const nlohmann::json& object)> on_add;
  std::function<void(const nlohmann::json& old_object, const nlohmann::json& object)> on_update;
  std::function<void(const nlohmann::json& object)> on_delete;
  // Called for every add, update and delete with the object's key; cheap (no
  // parse). Controllers that only enqueue keys should use this alone.
  std::function<void(const std::string& key)> on_change = nullptr;
  // Whether on_update reads its first argument. False: the kept copy is
  // neither decompressed nor parsed for it, and on_update is given a null
  // object as the old one (an update of a projected object otherwise costs
  // two parses: the new object's and the old one's).
  bool update_reads_old = true;
};

// Reduces an object, in place, to the members its readers use. It must keep
// metadata.name, metadata.namespace and metadata.resourceVersion, or make
// the object null: the store then keeps nothing for it and reports nothing
// (not a deletion: nobody reads it any more; a stored copy is dropped).
using Projection = std::function<void(nlohmann::json& object)>;

// A projection that depends on the other objects of one list (a run keeps
// its output only while it is among its agent's newest runs, and a list
// names them in any order). A relist's Replacement makes one per list and
// shows it every object, after the projection, in list order; it may cut
// the object further and name objects listed before it that are now to be
// cut again. Then what the list keeps never holds more than the watch
// path would: a fleet's relist with every output at its size limit held
// them all until the handlers had run (220.8 MiB at 10,000 agents).
class ListPass {
 public:
  virtual ~ListPass() = default;
  // `object` as projected; returns the keys of objects listed earlier in
  // this list to pass to revisit().
  virtual std::vector<std::string> admit(nlohmann::json& object) = 0;
  // One of those, as kept so far: cut it again.
  virtual void revisit(nlohmann::json& object) = 0;
};
using ListPassFactory = std::function<std::unique_ptr<ListPass>()>;

class Store {
 public:
  // "namespace/name", or "name" for cluster-scoped objects.
  static std::string key_of(const nlohmann::json& object);

  void set_handlers(StoreHandlers handlers);
  // Applied to every object before it is kept or handed to a handler, and
  // a pass made for each relist (nullptr: none). Set before the first object.
  // A text cut (text_cut.h) is applied to a scanned event's text before it
  // is parsed for the projection; it must keep what the projection reads.
  void set_projection(Projection projection, ListPassFactory list_pass = nullptr,
                      std::shared_ptr<const TextCut> text_cut = nullptr);

  // Applies one ADDED, MODIFIED or DELETED event and runs the handler.
  void apply(WatchEvent event);
  // The same for an event from the fast scanner (no JSON tree unless a
  // parsed-object handler is set).
  void apply(const ScannedWatchEvent& event);
  // Drops what is kept for `key` as a deletion: handlers are told, with
  // the kept copy (an object the informer refuses is gone for readers).
  void remove(const std::string& key);

  // The new contents of a relist, built off to the side page by page: each
  // object is projected and encoded as it arrives, so a list of the whole
  // fleet is never held as parsed trees (at 10,000 agents those would be
  // gigabytes; the projected text is a few percent of it).
  class Replacement {
   public:
    void add(nlohmann::json object);
    size_t size() const { return entries_.size(); }
    // What it keeps of one listed object so far (tests, benchmarks).
    std::optional<nlohmann::json> get(const std::string& key) const;

   private:
    friend class Store;
    Replacement(const Store& store, std::unique_ptr<ListPass> pass)
        : store_(&store), pass_(std::move(pass)) {}
    // The pass cuts an entry already kept again.
    void revisit(const std::string& key);
    const Store* store_;
    std::unique_ptr<ListPass> pass_;
    StoredObjects entries_;
  };
  Replacement begin_replace() const {
    return Replacement(*this, list_pass_ ? list_pass_() : nullptr);
  }

  // Buffer and swap: swaps the new contents in at once, then reports what
  // changed against the old contents: deletes for objects that vanished
  // (including deletions missed while disconnected), adds for new ones,
  // updates where resourceVersion moved.
  void replace(Replacement replacement);
  void replace(std::vector<nlohmann::json> items);

  // Applies the projection again to what is kept for `key` (when its answer
  // has changed since: the projection may read state outside the object),
  // dropping it if the projection now discards it. Not an event: no handler
  // runs.
  void reproject(const std::string& key);

  std::optional<nlohmann::json> get(const std::string& key) const;
  // Whether `key` is stored, without parsing it.
  bool contains(const std::string& key) const;
  std::vector<nlohmann::json> list() const;
  // fn(object) for each object in key order, parsed one at a time: a pass
  // over the fleet's Agents holds one parsed tree, not all of them (a
  // metrics scrape through list() held about 20 MiB of trees at 1,000).
  // Each object is fn's to keep (list() moves them out).
  void for_each(const std::function<void(nlohmann::json&&)>& fn) const;
  std::vector<std::string> keys() const;
  // The objects whose key ("ns/name") starts with `prefix`, in key order,
  // without a walk of the rest (e.g. a Job's Pods, named after it).
  std::vector<nlohmann::json> with_key_prefix(std::string_view prefix) const;
  size_t size() const;
  // Bytes the kept objects take as stored, and as text, and the
  // compression dictionary's tables (for benchmarks).
  struct Footprint {
    std::size_t stored_bytes = 0, text_bytes = 0, dictionary_bytes = 0;
  };
  Footprint footprint() const;

 private:
  // Drops what is kept for `key`, reporting nothing.
  void forget(const std::string& key);
  // Strips managedFields and applies the projection, in place; false when
  // the projection discards the object.
  bool project(nlohmann::json& object) const;
  // The entry for an object already projected (left as it was given).
  StoredObjectPtr stored(const std::string& key, nlohmann::json& projected) const;
  // Both; null when the projection discards the object.
  StoredObjectPtr encode(const std::string& key, nlohmann::json& object) const;
  CompressedText compress(std::string_view text) const;
  // An entry's text into `plain`. Aborts if it does not decompress: that is
  // this store's own memory, so only a bug gets there.
  void decompress(CompressedTextView text, std::string& plain) const;
  // An entry's text, read out under the lock, with what gives its object
  // back outside it (object_identity.h).
  struct Plain {
    std::string text, key, resource_version;
    bool identity_elided = false;
  };
  void read_out(const StoredEntryView& entry, Plain& out) const;
  static nlohmann::json object_of(const Plain& plain);
  // The object an entry holds.
  nlohmann::json parse(const StoredEntryView& entry) const;
  // Stores (or erases) one entry, then runs the handlers outside the lock.
  // `parsed` is the new object when the caller already has it as a tree.
  // A deletion's entry carries only its key (nothing of it is kept).
  void commit(bool deleted, StoredObjectPtr entry, const nlohmann::json* parsed);
  // What a swap of the contents changed, and the handlers told of it.
  struct SwapChanges;
  static SwapChanges compare(const StoredObjects& now_set, const StoredObjects& was_set);
  void report(const StoreHandlers& handlers, const SwapChanges& changes);

  mutable std::mutex mutex_;
  StoredObjects items_;
  std::shared_ptr<const StoreHandlers> handlers_ = std::make_shared<StoreHandlers>();
  Projection projection_;
  ListPassFactory list_pass_;
  std::shared_ptr<const TextCut> text_cut_;
  // Made from the first text compressed; set once, before any entry exists,
  // and never changed (every entry needs it).
  mutable std::once_flag dictionary_once_;
  mutable std::unique_ptr<const TextDictionary> dictionary_;
};

}  // namespace hb::kube
