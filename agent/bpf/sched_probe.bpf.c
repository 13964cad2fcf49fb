// SPDX-License-Identifier: GPL-2.0
/* Per-cgroup on-CPU time and run-queue latency (wake-up, or preemption, to running),
 * aggregated in per-CPU maps; nothing is sent to user space per event. User space sums
 * the CPUs and takes deltas each sampling interval.
 *
 * Two programs, reading what the scheduler already keeps instead of taking timestamps:
 * - on sched_stat_runtime, each increment of a task's runtime as update_curr() charges it,
 *   the same delta cgroup CPU accounting (cpuacct, cpu.stat) takes. A switch the program
 *   does not see (kernel 6.18 drops one now and then; see docs/ebpf.md) costs nothing,
 *   and a task that never switches out is counted as it runs, at every tick.
 * - on sched_switch, the arriving task's wait from `sched_info` (`last_queued`,
 *   `run_delay`: when the task was queued and its total wait), with the run queue's clock
 *   as "now".
 * Pointers are followed by direct BTF loads (field offsets relocated by CO-RE), and the
 * cgroup -> stats index resolution is cached per CPU under the css's serial number, so a
 * task in a cgroup nobody asked about costs a few loads per event.
 *
 * Two signals wake user space between samples, through the `wakeups` ring buffer (its
 * notification goes through irq_work, so it is safe from inside the scheduler), each off
 * until user space sets its bound:
 * - a registered cgroup's task waited at least wake_wait_bound_ns for a CPU;
 * - registered cgroups' demand over a sliding window of about 10 ms, summed over CPUs,
 *   reached wake_demand_millicores as a rate (LS demand rising above what the agent last
 *   planned for); sent with the figure. Demand is CPU time plus the time runnable tasks
 *   waited for a CPU (each wait counted when the task arrives, at most a window's worth):
 *   an LS task that BE keeps off its CPU runs less than it wants, and its CPU time alone
 *   would under-read the surge exactly when the CPU is contended. Each CPU keeps its
 *   share privately and adds it to the shared slots once it holds
 *   GLEANER_DEMAND_FLUSH_NS, so they are touched at most once per millisecond per CPU.
 * Signals are at least wake_min_gap_ns apart. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "sched_probe_abi.h"

/* Set by user space before load. */
const volatile bool track_all = false;         /* every cgroup, not only registered ones */
const volatile bool v1_cpu_controller = false; /* hybrid/v1: the cpu controller's cgroup */

/* Bumped by user space after each change to `tracked`, which makes every cached
 * resolution stale. Starts at 1 so that an all-zero cache entry never matches. */
volatile __u64 tracked_gen = 1;
/* Where the next search for a free stats index starts (a hint, not a lock). */
__u32 last_index = 0;

/* Wake-up signals; user space writes the bounds at any time (0: off). */
volatile __u64 wake_wait_bound_ns = 0;
volatile __u64 wake_demand_millicores = 0;
volatile __u64 wake_min_gap_ns = 5000000;
/* The BE QoS cgroup (kernfs node id; 0: none) and its level (depth below its hierarchy's
 * root). A wait of a registered cgroup's task that ends by taking the CPU from a task under
 * it is also counted as BE-caused. */
volatile __u64 be_cgroup_id = 0;
volatile __u32 be_level = 0;
/* The distinct levels of the registered cgroups, deepest first, tracked_level_count of
 * them: a task's registered ancestor can only sit at one of these, so these are the only
 * ancestors resolve_cgroup reads. User space keeps them (and the BE pair above) with the
 * registrations, and bumps tracked_gen after a change. */
volatile __u32 tracked_levels[GLEANER_MAX_TRACKED_LEVELS] = {};
volatile __u32 tracked_level_count = 0;
/* Signal only BE-caused waits (the bound still applies). */
volatile bool wake_be_caused_only = false;
__u64 last_wake_ns = 0;
__u64 wakeups_lost = 0; /* the ring buffer was full */

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 * 1024);
} wakeups SEC(".maps");

/* Registered cgroups' CPU time on this CPU not yet added to a window. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} demand_pending SEC(".maps");

/* The last slots' CPU time over all CPUs, by slot number modulo the ring's size. A slot
 * is reset by the first CPU that sees it anew; a CPU adding to it at that very moment may
 * lose its share, which only delays a signal (the agent's loop still runs). */
struct demand_slot {
  __u64 id;
  __u64 ns;
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, GLEANER_DEMAND_SLOTS);
  __type(key, __u32);
  __type(value, struct demand_slot);
} demand SEC(".maps");

/* Accounted cgroups: kernfs node id (== the directory's inode number) -> stats index. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, GLEANER_MAX_CGROUPS);
  __type(key, __u64);
  __type(value, __u32);
} tracked SEC(".maps");

/* Stats index -> cgroup id. Taking an index is inserting it here with BPF_NOEXIST,
 * which exactly one of several racing claimants (CPUs or user space) wins. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, GLEANER_MAX_CGROUPS);
  __type(key, __u32);
  __type(value, __u64);
} claimed SEC(".maps");

/* Indexed, not hashed: a per-CPU array lookup is a few instructions (inlined). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, GLEANER_MAX_CGROUPS);
  __type(key, __u32);
  __type(value, struct gleaner_cgroup_stats);
} stats SEC(".maps");

/* css serial number -> stats index (0: not accounted) and whether the cgroup is under the
 * BE cgroup, valid while `gen` == tracked_gen. */
struct cache_entry {
  __u64 css_serial;
  __u64 gen;
  __u32 index;
  __u32 under_be;
};
struct cgroup_cache {
  struct cache_entry entries[GLEANER_CGROUP_CACHE];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct cgroup_cache);
} cgroup_cache SEC(".maps");

/* Switches not accounted because the stats table was full (track_all only). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} dropped SEC(".maps");

/* A task's run_delay and pcount just after its last arrival that this program saw, in a
 * direct-mapped table indexed by thread id: an array lookup is a few instructions, a
 * task-local storage lookup a helper call several times that. Entries are tagged with the
 * thread id and start time; a task whose entry another task took (thread ids equal modulo
 * the table size) only loses the part of a wait spent queued on another CPU before a
 * migration (see record_wait). */
struct task_wait {
  __u64 start_time;
  __u64 run_delay;
  __u32 tid;
  __u32 pcount;
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, GLEANER_TASK_SLOTS);
  __type(key, __u32);
  __type(value, struct task_wait);
} task_waits SEC(".maps");

/* A free stats index for `id`, from a few tries after the hint. */
static __always_inline __u32 claim_index(__u64 id) {
  __u32 hint = last_index;
  for (__u32 i = 1; i <= 8; i++) {
    __u32 index = (hint + i) % (GLEANER_MAX_CGROUPS - 1) + 1; /* 1 .. MAX - 1 */
    if (bpf_map_update_elem(&claimed, &index, &id, BPF_NOEXIST) == 0) {
      last_index = index;
      return index;
    }
  }
  return GLEANER_INDEX_FULL;
}

/* The css through which `t`'s cgroup is found: the cpu controller's (v1) or the default
 * hierarchy cgroup's own (v2). */
static __always_inline struct cgroup_subsys_state *task_css(struct task_struct *t) {
  struct css_set *cset = t->cgroups;
  if (!cset) return NULL;
  if (v1_cpu_controller) {
    /* The cpu controller's index differs between kernel configs: relocated, not assumed. */
    int idx = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
    if (idx < 0 || idx >= bpf_core_enum_value(enum cgroup_subsys_id, CGROUP_SUBSYS_COUNT))
      return NULL;
    return cset->subsys[idx];
  }
  struct cgroup *cg = cset->dfl_cgrp;
  return cg ? &cg->self : NULL;
}

/* Kernels before 6.1 keep their ancestors' ids (`ancestor_ids[]`) where 6.1 and later keep
 * pointers to the ancestors (`ancestors[]`; include/linux/cgroup-defs.h, struct cgroup).
 * CO-RE poisons the reads of the field the running kernel lacks, in a branch the verifier
 * knows is never taken; each read is a function of its own (not inlined) so that the
 * compiler cannot hoist the poisoned offset out of that branch (it did, out of the loop in
 * resolve_cgroup). */
struct cgroup___ancestor_ids {
  __u64 ancestor_ids[0];
} __attribute__((preserve_access_index));

static __noinline __u64 ancestor_id_from_ids(struct cgroup *cg, __u32 level) {
  __u64 id = 0;
  bpf_core_read(&id, sizeof(id), &((struct cgroup___ancestor_ids *)cg)->ancestor_ids[level]);
  return id;
}

static __noinline __u64 ancestor_id_from_pointers(struct cgroup *cg, __u32 level) {
  struct cgroup *ancestor = NULL;
  bpf_core_read(&ancestor, sizeof(ancestor), &cg->ancestors[level]);
  return ancestor ? BPF_CORE_READ(ancestor, kn, id) : 0;
}

/* The kernfs id of the ancestor at `level` (0: the hierarchy's root) of `cg`, whose own
 * level is `own` (>= `level`). The kernel keeps every cgroup's ancestors in a table
 * indexed by level, so this is one table read whatever the distance. */
static __always_inline __u64 ancestor_id(struct cgroup *cg, __u32 own, __u32 level) {
  if (level == own) return BPF_CORE_READ(cg, kn, id);
  if (bpf_core_field_exists(struct cgroup___ancestor_ids, ancestor_ids))
    return ancestor_id_from_ids(cg, level);
  return ancestor_id_from_pointers(cg, level);
}

/* The stats index of cgroup `id` under track_all: its own, allocated on first sight. */
static __always_inline __u32 own_index(__u64 id) {
  __u32 *found = bpf_map_lookup_elem(&tracked, &id);
  if (found) return *found;
  __u32 index = claim_index(id);
  if (index == GLEANER_INDEX_FULL) return index;
  if (bpf_map_update_elem(&tracked, &id, &index, BPF_NOEXIST) == 0) return index;
  bpf_map_delete_elem(&claimed, &index); /* another CPU resolved it first */
  found = bpf_map_lookup_elem(&tracked, &id);
  return found ? *found : GLEANER_INDEX_FULL;
}

/* What a cache miss resolves, for the cgroup at address `cgroup` (a struct cgroup *):
 * its stats index in the low 32 bits (0: not accounted), and bit 32 set when it is the BE
 * cgroup or below it.
 * - Without track_all the index is that of its deepest registered ancestor (itself
 *   included). Tasks live in container cgroups and in whatever a container makes below
 *   them; pods are registered by their pod directory. Only the ancestors at the registered
 *   levels are read, deepest first, so the cost is the number of distinct registered
 *   levels (two on a kubelet node: Guaranteed pods sit one level above the others),
 *   whatever the task's depth; BE membership is one read at the BE cgroup's level.
 * - A global function (not static, not inlined) is verified once, on its own, and its
 *   callers see only a number. Inlined, its loop was walked again on every path through
 *   each of its three call sites: 61,294 instructions verified for gleaner_switch, 8,086
 *   as it is (docs/ebpf.md). Its argument is a number for the same reason (a global
 *   function takes no kernel pointer), so the cgroup is read through
 *   bpf_probe_read_kernel. */
__noinline __u64 resolve_cgroup(__u64 cgroup) {
  struct cgroup *cg = (struct cgroup *)cgroup;
  if (!cg) return 0;
  const __u32 own = BPF_CORE_READ(cg, level);
  __u64 resolved = 0;
  if (track_all) {
    resolved = own_index(BPF_CORE_READ(cg, kn, id));
  } else {
    const __u32 count = tracked_level_count;
    for (__u32 i = 0; i < GLEANER_MAX_TRACKED_LEVELS && i < count; i++) {
      const __u32 level = tracked_levels[i];
      if (level > own) continue;
      __u64 id = ancestor_id(cg, own, level);
      __u32 *found = bpf_map_lookup_elem(&tracked, &id);
      if (found) {
        resolved = *found;
        break;
      }
    }
  }
  const __u64 be = be_cgroup_id;
  const __u32 level = be_level;
  if (be && level <= own && ancestor_id(cg, own, level) == be)
    resolved |= 1ull << 32;
  return resolved;
}

/* Keyed by the css's serial number, which the kernel never reuses (unlike addresses) and
 * which sits in the css itself: a hit reads no cgroup or kernfs node. */
static __always_inline struct cache_entry *cached_entry(struct cgroup_subsys_state *css) {
  __u64 serial = css->serial_nr;
  __u32 zero = 0;
  struct cgroup_cache *cache = bpf_map_lookup_elem(&cgroup_cache, &zero);
  if (!cache) return NULL;
  /* Read before resolving: a change racing with the resolution leaves an entry that the
   * bumped generation already invalidates. */
  __u64 gen = tracked_gen;
  struct cache_entry *e = &cache->entries[(serial ^ (serial >> 6)) & (GLEANER_CGROUP_CACHE - 1)];
  if (e->css_serial == serial && e->gen == gen) return e;
  /* Read as a number: the verifier passes no pointer where a global function takes one. */
  __u64 cgroup = 0;
  bpf_core_read(&cgroup, sizeof(cgroup), &css->cgroup);
  const __u64 resolved = resolve_cgroup(cgroup);
  e->index = (__u32)resolved;
  e->under_be = (__u32)(resolved >> 32);
  e->css_serial = serial;
  e->gen = gen;
  return e;
}

/* The cache is a one-entry per-CPU array, whose lookup cannot fail; resolving again on the
 * NULL path the verifier insists on would only add a copy of the resolution for it to walk. */
static __always_inline __u32 cached_index(struct cgroup_subsys_state *css) {
  struct cache_entry *e = cached_entry(css);
  return e ? e->index : 0;
}

static __always_inline __u32 log2_slot(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) { r += 1; }
  return r < GLEANER_RUNQ_SLOTS ? r : GLEANER_RUNQ_SLOTS - 1;
}

/* The table entry for `t`'s thread id, whoever holds it. */
static __always_inline struct task_wait *task_slot(struct task_struct *t) {
  __u32 key = (__u32)t->pid & (GLEANER_TASK_SLOTS - 1);
  return bpf_map_lookup_elem(&task_waits, &key);
}

/* `t` is about to run: its wait is what the scheduler will add to its run_delay when it
 * arrives (now - last_queued), plus any earlier part of the same wait already in
 * run_delay (the task was queued on another CPU before a migration), known when the
 * task's previous arrival was seen here. */
static __always_inline bool record_wait(struct task_struct *t, struct task_wait *w,
                                        struct gleaner_cgroup_stats *s, __u64 *waited_out) {
  __u64 queued = t->sched_info.last_queued;
  if (!queued) return false; /* not queued: the scheduler records no wait either */
  /* This CPU's run queue, through the task's cfs_rq (set for every task on its CPU, any
   * class; `runqueues` itself is not reachable without CONFIG_KALLSYMS_ALL). Its clock
   * was updated by __schedule() before it picked `t`. */
  struct cfs_rq *cfs = t->se.cfs_rq;
  struct rq *rq = cfs ? cfs->rq : NULL;
  if (!rq) return false;
  __u64 now = rq->clock;
  __u64 segment = now > queued ? now - queued : 0;
  __u64 run_delay = t->sched_info.run_delay;
  __u64 pcount = t->sched_info.pcount;
  __u64 waited = segment;
  __u32 tid = t->pid;
  if (w) {
    __u64 start_time = t->start_time;
    /* Same task and no arrival since the one recorded: all of run_delay's growth since
     * then belongs to this wait. */
    if (w->tid == tid && w->start_time == start_time && w->pcount == (__u32)pcount &&
        run_delay >= w->run_delay)
      waited = run_delay - w->run_delay + segment;
    w->tid = tid;
    w->start_time = start_time;
    w->run_delay = run_delay + segment;
    w->pcount = (__u32)(pcount + 1);
  }
  s->runq_count += 1;
  s->runq_sum_ns += waited;
  __u32 slot_index = log2_slot(waited);
  if (slot_index < GLEANER_RUNQ_SLOTS) s->runq_slots[slot_index] += 1;
  *waited_out = waited;
  return true;
}

/* Whether `prev`, the task `next` takes the CPU from, is under the BE cgroup: then BE held
 * the CPU until the waiting task got it, and the wait is (at least in its end) BE's doing.
 * A wait behind another LS task, the agent or a node daemon is not. */
static __always_inline bool taken_from_be(struct task_struct *prev) {
  if (!be_cgroup_id || prev->pid == 0) return false;
  struct cgroup_subsys_state *css = task_css(prev);
  if (!css) return false;
  struct cache_entry *e = cached_entry(css);
  return e && e->under_be != 0;
}

/* Sends a wake-up unless one went less than wake_min_gap_ns ago; whether it was sent. */
static __always_inline bool signal_wakeup(__u32 kind, __u64 value_ns, __u64 span_ns, __u32 index,
                                          __u64 now, bool be_caused) {
  if (now - last_wake_ns < wake_min_gap_ns) return false;
  last_wake_ns = now; /* racing CPUs may both send: two wake-ups, harmless */
  struct gleaner_wakeup ev = {};
  ev.at_ns = now;
  ev.value_ns = value_ns;
  ev.span_ns = span_ns;
  ev.kind = kind;
  ev.cpu = bpf_get_smp_processor_id();
  ev.be_caused = be_caused ? 1 : 0;
  if (index != 0) {
    __u64 *id = bpf_map_lookup_elem(&claimed, &index);
    if (id) ev.cgroup_id = *id;
  }
  if (bpf_ringbuf_output(&wakeups, &ev, sizeof(ev), 0) != 0)
    __sync_fetch_and_add(&wakeups_lost, 1);
  return true;
}

/* Adds `runtime` of a registered cgroup to this CPU's share of the demand slots, and
 * signals when the CPU time in the sliding window, as a rate, reaches
 * wake_demand_millicores: the figure itself goes to user space, not only the crossing. */
static __always_inline void account_demand(__u64 runtime) {
  __u32 zero = 0;
  __u64 *pending = bpf_map_lookup_elem(&demand_pending, &zero);
  if (!pending) return;
  *pending += runtime;
  if (*pending < GLEANER_DEMAND_FLUSH_NS) return;
  __u64 share = *pending;
  *pending = 0;
  __u64 now = bpf_ktime_get_ns();
  __u64 id = now / GLEANER_DEMAND_SLOT_NS;
  __u32 key = (__u32)(id % GLEANER_DEMAND_SLOTS);
  struct demand_slot *slot = bpf_map_lookup_elem(&demand, &key);
  if (!slot) return;
  if (slot->id != id) {
    slot->id = id;
    slot->ns = 0;
  }
  __sync_fetch_and_add(&slot->ns, share);
  __u64 bound = wake_demand_millicores;
  if (bound == 0) return;
  __u64 total = 0;
#pragma unroll
  for (__u32 i = 0; i < GLEANER_DEMAND_SPAN_SLOTS; i++) {
    __u32 k = (__u32)((id - i) % GLEANER_DEMAND_SLOTS);
    struct demand_slot *s = bpf_map_lookup_elem(&demand, &k);
    if (s && s->id == id - i) total += s->ns;
  }
  __u64 span = now - (id - (GLEANER_DEMAND_SPAN_SLOTS - 1)) * GLEANER_DEMAND_SLOT_NS;
  if (total * 1000 >= bound * span) signal_wakeup(GLEANER_WAKE_LS_DEMAND, total, span, 0, now, false);
}

/* The stats index `t`'s time and waits go to (0: none; GLEANER_INDEX_FULL: table full). */
static __always_inline __u32 task_index(struct task_struct *t) {
  struct cgroup_subsys_state *css = task_css(t);
  return css ? cached_index(css) : 0;
}

/* update_curr() charged `runtime` ns to `p`, the task running on some CPU (not always
 * this one: reading a running task's runtime brings it up to date from the reader's CPU).
 * The counters are per CPU and each CPU only writes its own, with interrupts off, so the
 * add needs no atomics. */
SEC("tp_btf/sched_stat_runtime")
int BPF_PROG(gleaner_runtime, struct task_struct *p, __u64 runtime) {
  if (p->pid == 0) return 0; /* an idle task */
  __u32 index = task_index(p);
  if (index == 0 || index == GLEANER_INDEX_FULL) return 0; /* the switch counts drops */
  struct gleaner_cgroup_stats *s = bpf_map_lookup_elem(&stats, &index);
  if (s) s->cpu_ns += runtime;
  if (wake_demand_millicores != 0) account_demand(runtime);
  return 0;
}

/* `next` is about to run: record its wait. */
SEC("tp_btf/sched_switch")
int BPF_PROG(gleaner_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  if (next->pid == 0) return 0; /* the idle task */
  __u32 index = task_index(next);
  if (index == 0) return 0;
  if (index == GLEANER_INDEX_FULL) {
    __u32 zero = 0;
    __u64 *lost = bpf_map_lookup_elem(&dropped, &zero);
    if (lost) *lost += 1;
    return 0;
  }
  struct gleaner_cgroup_stats *s = bpf_map_lookup_elem(&stats, &index);
  if (!s) return 0;
  __u64 waited = 0;
  if (!record_wait(next, task_slot(next), s, &waited)) return 0;
  const bool be_caused = taken_from_be(prev);
  if (be_caused) {
    s->be_runq_count += 1;
    s->be_runq_sum_ns += waited;
    __u32 slot_index = log2_slot(waited);
    if (slot_index < GLEANER_RUNQ_SLOTS) s->be_runq_slots[slot_index] += 1;
  }
  if (waited && wake_demand_millicores != 0) {
    const __u64 window = GLEANER_DEMAND_SPAN_SLOTS * GLEANER_DEMAND_SLOT_NS;
    account_demand(waited < window ? waited : window);
  }
  __u64 bound = wake_wait_bound_ns;
  if (bound != 0 && waited >= bound && (be_caused || !wake_be_caused_only))
    signal_wakeup(GLEANER_WAKE_RUNQ_WAIT, waited, 0, index, bpf_ktime_get_ns(), be_caused);
  return 0;
}

/* Does nothing. Loaded only on request (SchedProbeOptions::calibrate): under BPF run-time
 * statistics its cost per event is the statistics' own overhead plus the call into a
 * program, the floor under gleaner_switch's figure. */
SEC("tp_btf/sched_switch")
int BPF_PROG(gleaner_calibrate) {
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
