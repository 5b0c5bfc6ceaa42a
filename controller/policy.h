/* SPDX-License-Identifier: MIT */
/*
 * The policy interface of the parties controller.
 *
 * A policy sees an observation and returns a decision, nothing else: it never
 * touches the machine, the metric sources or the log. The loop builds the
 * observation, validates the decision (no overlap, no allocation below a
 * minimum or above a maximum, no resource the machine lacks), applies it and
 * then tells the policy what actually happened through reflect(), the way the
 * kernel's cpuidle governors get select() and reflect().
 *
 * Resources are a table indexed by enum pol_res; a policy iterates it and
 * skips what is not available, so a new resource (say LLC ways) needs no
 * change in a policy that does not want to name it. A resource is one file,
 * controller/res/NAME.c (its struct res_ops: config keys, limits, initial
 * allocation, validation, actuator, simulator, log field, Prometheus series),
 * plus its line in POL_RES_LIST below; controller/README.md shows one.
 *
 * Adding a policy: write controller/policies/NAME.c defining
 * `const struct pol_ops pol_NAME_ops` and add one line to the table in
 * controller/policies/registry.c.
 */
#ifndef PARTIES_POLICY_H
#define PARTIES_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h" /* common/: a plain value type */

/* The machine's topology as the actuators read it: the loop's, opaque here
 * (policies never see the actuators; what they need of it is copied into
 * struct pol_topology). */
struct act_topo;
/* A setting's table entry (controller/cfg_key.h): a policy may list its own. */
struct cfg_key;

/* NUMA node ids 0..63 (the loop checks it equals the actuators' bound). */
#define POL_NODES_MAX 64

/*
 * The resources, in enum order (the log's field order): X(ENUM, name), name
 * being controller/res/name.c's struct res_ops res_name_ops. Units:
 *   CORES  cores in the workload's cpuset; one core as smt says
 *   FREQ   max frequency of the workload's CPUs; kHz
 *   QUOTA  CFS bandwidth; milli-cores (1000 = one CPU)
 */
/* clang-format off */
#define POL_RES_LIST(X) \
	X(CORES, cores) \
	X(FREQ,  freq)  \
	X(QUOTA, quota) \
	/* (the end of the list: a new resource goes on the line above) */
/* clang-format on */

/* clang-format off */
enum pol_res {
#define POL_RES_ENUM(e, n) POL_RES_##e,
	POL_RES_LIST(POL_RES_ENUM)
#undef POL_RES_ENUM
	POL_RES_COUNT,
};
/* clang-format on */

/*
 * What one unit of POL_RES_CORES is ([resources] smt =). On a machine
 * without SMT all three are one cpu.
 *   whole    a physical core: all of its (managed) threads, never split
 *            between workloads; alloc counts physical cores;
 *   primary  a physical core's first thread only, its siblings left idle (the
 *            released PARTIES code's cpusets); alloc counts physical cores;
 *   shared   one logical cpu, whichever core it is on; alloc counts cpus.
 */
enum pol_smt {
	POL_SMT_WHOLE = 0,
	POL_SMT_PRIMARY,
	POL_SMT_SHARED,
};

/* "cores", "freq", "quota"; NULL when out of range. */
const char *pol_res_str(enum pol_res r);
/* Parse a resource name; 0 or -EINVAL. */
int pol_res_parse(const char *s, enum pol_res *r);
/* An amount of r in the unit messages and the log give it (frequency in
 * MHz; cores and milli-cores as they are). */
long pol_res_shown(enum pol_res r, long v);

#define POL_MAX_WORKLOADS 16
#define POL_HIST	  16 /* slack samples kept in the observation's history */
#define POL_NAME_LEN	  32
#define POL_ACTION_LEN	  32
#define POL_REASON_LEN	  128

/* What is known about one resource on this machine in this run. */
struct pol_res_info {
	bool avail;  /* the machine has it and the config manages it */
	bool pooled; /* zero-sum: units come from a free pool or a donor (cores,
		      * quota); otherwise private per workload (frequency) */
	long step;   /* units per action (cores 1, freq 100000 kHz, quota 100 mc) */
	long total;  /* pooled: units managed in all; private: unused */
	long free;   /* pooled: units in the free pool now */
};

/* Freshness of one workload's latency this interval. */
enum pol_lat_state {
	POL_LAT_FRESH = 0, /* p99 is from recent requests */
	POL_LAT_IDLE,	   /* the source works but saw no request recently */
	POL_LAT_STALE,	   /* no fresh data (feed not updated, source error) */
};

/* Latencies in ns. */
struct pol_wl_obs {
	char name[POL_NAME_LEN];
	bool alive;		  /* false once the workload has exited */
	enum pol_lat_state state; /* p99/slack are meaningful only when FRESH */
	double target_ns;	  /* QoS target for p99 */
	double p99_ns;		  /* latest p99 from the workload's source */
	double p99_avg_ns;	  /* mean of the fresh p99s over the averaging window */
	double slack;		  /* (target - p99) / target */
	double slack_avg;	  /* the same over p99_avg_ns ("long slack") */
	long alloc[POL_RES_COUNT];
	long min[POL_RES_COUNT];
	long max[POL_RES_COUNT];
	unsigned int nhist;	     /* valid entries in hist_slack */
	double hist_slack[POL_HIST]; /* recent fresh slacks, oldest first */
	/* What else is known this interval; NAN when the run cannot tell. */
	double rps;		 /* request rate (the driving source's) */
	double cpu_used;	 /* CPU used since the last interval, in cores (1.0 = one
				  * core busy the whole interval) */
	double p99_client_ns;	 /* client-side p99 (a client feed) */
	double p99_service_ns;	 /* server-side: start of service -> end */
	double p99_sojourn_ns;	 /* server-side: arrival at the server -> end */
	struct act_cpumask cpus; /* the cpus it has now (when cores are managed) */
	int threads;		 /* how many: alloc[POL_RES_CORES] whole cores are more
				  * threads under smt = whole on an SMT machine */
	uint64_t nodes;		 /* NUMA nodes of its cpus (bit n: node n) */
};

/* The machine's cores as the loop hands them out: sibling groups and NUMA
 * nodes (read from sysfs, or the simulator's made-up machine). */
struct pol_topology {
	enum pol_smt smt;		/* what one unit of POL_RES_CORES is */
	const struct act_topo *topo;	/* the loop's (opaque to policies) */
	int threads_max;		/* most threads any core has (1 without SMT) */
	struct act_cpumask cpus;	/* the cpus that may be handed out */
	uint64_t nodes;			/* nodes that have some of them */
	long node_units[POL_NODES_MAX]; /* units of POL_RES_CORES on each node */
	long node_free[POL_NODES_MAX];	/* of which free now */
};

struct pol_observation {
	uint64_t now_ms; /* monotonic time of this observation */
	uint64_t tick;	 /* observation number, from 0 */
	unsigned int interval_ms;
	int nwl;
	struct pol_res_info res[POL_RES_COUNT];
	struct pol_wl_obs wl[POL_MAX_WORKLOADS];
	struct pol_topology topo; /* meaningful when res[POL_RES_CORES].avail */
};

/* Per workload: the allocation the policy wants, starting as the current one. */
struct pol_wl_decision {
	long alloc[POL_RES_COUNT];
	/* Optional: exactly which cpus (set_cpus true; as many as
	 * alloc[POL_RES_CORES] units, whole units under smt whole or primary,
	 * disjoint from every other set_cpus). Otherwise the loop picks: shrink
	 * from the highest core, grow from the lowest free, on the workload's
	 * node. */
	bool set_cpus;
	struct act_cpumask cpus;
	/* Optional: the NUMA node its cores should be on (set_node true; a node
	 * of obs->topo.nodes). Cores it grows by come from there while it has
	 * free ones; cores elsewhere move there as cores there are free. Without
	 * it, the loop keeps a workload on the node most of its cores are on. */
	bool set_node;
	int node;
	char action[POL_ACTION_LEN]; /* short verb for the log: "up cores", "hold" */
	char reason[POL_REASON_LEN]; /* why, with the numbers */
};

struct pol_decision {
	int nwl;
	struct pol_wl_decision wl[POL_MAX_WORKLOADS];
	char event[POL_REASON_LEN]; /* a notable event ("sustained violation"), or "" */
};

/* What the loop did with a decision. */
struct pol_outcome {
	bool applied;		  /* the decision was valid and every write succeeded */
	char why[POL_REASON_LEN]; /* when !applied: what was rejected or failed */
	long alloc[POL_MAX_WORKLOADS][POL_RES_COUNT]; /* allocation now in force */
};

/* Policy-specific settings from the [policy NAME] section, in file order. */
struct pol_param {
	const char *key;
	const char *val;
};

/* In: what init() starts from. Out, on failure: what is wrong. */
struct pol_init_args {
	size_t sz;     /* sizeof(struct pol_init_args) */
	uint64_t seed; /* for anything random, so runs are reproducible */
	int nwl;
	const struct pol_param *params;
	int nparams;
	char *err; /* out: what is wrong */
	size_t err_len;
	int err_param; /* out: index of the offending param, or -1 */
};

struct pol_ops {
	const char *name;
	const char *desc; /* one line for --help */
	/* Optional: check one setting at config time (0 or -EINVAL with err). */
	int (*check_param)(const char *key, const char *val, char *err, size_t err_len);
	/* Optional: allocate state into *state. 0 or a negative errno. args is the
	 * caller's and not const: on failure init fills err and err_param. */
	int (*init)(void **state, struct pol_init_args *args);
	/* Required: fill dec (pre-filled with the current allocation). 0 or a
	 * negative errno (the loop then keeps the allocation). */
	int (*decide)(void *state, const struct pol_observation *obs, struct pol_decision *dec);
	/* Optional: what actually happened to the last decision. */
	void (*reflect)(void *state, const struct pol_observation *obs,
			const struct pol_decision *dec, const struct pol_outcome *out);
	/* Optional: free state. */
	void (*exit)(void *state);
	/* Optional: the decision interval its settings ask for. *interval_ms
	 * comes in as [controller] interval_ms (ctl_set: written in the file,
	 * else its default); the op may change it, and says in note (shown at
	 * start) what of the file it did not take as written. params are
	 * already checked by check_param. */
	void (*interval)(const struct pol_param *params, int nparams, bool ctl_set,
			 unsigned int *interval_ms, char *note, size_t note_len);
	/* Optional: the policy's published variants, NULL-terminated, each one
	 * "key=value" setting of [policy NAME] (parties: its two flavours).
	 * `parties --list-policies` lists one line per variant, so a benchmark
	 * finds every policy and variant in this table alone. */
	const char *const *variants;
	/* Optional: the table its settings are read from (cfg_key.h), so that
	 * they can be listed (configs/example.ini documents each one). */
	const struct cfg_key *keys;
	int nkeys;
};

/* The table in policies/registry.c, NULL-terminated. */
extern const struct pol_ops *const pol_registry[];
/* Look a policy up by name; NULL if there is none. */
const struct pol_ops *pol_find(const char *name);

/* Helpers for policies. */
/* Fill dec with obs's current allocation, action "hold", empty reason. */
void pol_decision_init(struct pol_decision *dec, const struct pol_observation *obs);
/* Set dec's pooled resource r from what each workload wants: shrinks first,
 * then grows by least slack (unknown last) while the pool of obs->res[r].total
 * lasts. */
void pol_grant(const struct pol_observation *obs, int r, const long *want,
	       struct pol_decision *dec);
/* A table-driven policy's one setting (controller/cfg_key.h): set at base,
 * or refused with what is wrong (an unknown key: the table's names). 0 or
 * -EINVAL. */
struct cfg_key;
int pol_param_set(const struct cfg_key *tab, int n, void *base, const char *key, const char *val,
		  char *err, size_t err_len);
/* init()'s settings applied in file order by set() to base; the first one
 * refused is named in a->err_param. 0, or set()'s error. */
int pol_parse_params(struct pol_init_args *a, void *base,
		     int (*set)(void *base, const char *key, const char *val, char *err,
				size_t err_len));
/* CPUs' worth of CPU time (the unit of cpu_used) in one unit of POL_RES_CORES
 * for workload i: 1, or under smt = whole its own threads per core (the
 * machine's most before it has any). */
double pol_threads_per_core(const struct pol_observation *obs, int i);

#endif /* PARTIES_POLICY_H */
