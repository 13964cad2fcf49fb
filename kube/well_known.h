#pragma once
// The resource names, labels and annotations Gleaner reads or writes on Kubernetes objects,
// each named once: the agent and the scheduler speak of the same keys, and a key owned by
// another project (Koordinator, Spark's operator, Kubeflow, pod groups) is spelled as that
// project spells it.

namespace gleaner::kube {

// Resources (Node allocatable, container requests and limits).
inline constexpr const char* kResourceCpu = "cpu";
inline constexpr const char* kResourceMemory = "memory";
inline constexpr const char* kResourceBatchCpu = "kubernetes.io/batch-cpu";        // millicores
inline constexpr const char* kResourceBatchMemory = "kubernetes.io/batch-memory";  // bytes

// The scheduler the API server names in a pod that names none (pod defaulting).
inline constexpr const char* kDefaultScheduler = "default-scheduler";
// Koordinator's scheduler, the one its example ClusterColocationProfile names.
inline constexpr const char* kKoordScheduler = "koord-scheduler";

// Koordinator's: a pod's QoS and priority class, a node's reservation and reclaim ratios,
// an elastic quota's name.
inline constexpr const char* kQosClassLabel = "koordinator.sh/qosClass";
inline constexpr const char* kPriorityClassLabel = "koordinator.sh/priority-class";
inline constexpr const char* kKoordPriorityLabel = "koordinator.sh/priority";
inline constexpr const char* kReservationAnnotation = "node.koordinator.sh/reservation";
inline constexpr const char* kCpuReclaimRatioLabel = "node.koordinator.sh/cpu-reclaim-ratio";
inline constexpr const char* kMemoryReclaimRatioLabel = "node.koordinator.sh/memory-reclaim-ratio";
inline constexpr const char* kColocationStrategyAnnotation =
    "node.koordinator.sh/colocation-strategy";
inline constexpr const char* kKoordQuotaLabel = "quota.scheduling.koordinator.sh/name";

// Spark's: a pod's role and application; ACK's Spark operator marks templates to colocate.
inline constexpr const char* kSparkRoleLabel = "spark-role";
inline constexpr const char* kSparkAppSelectorLabel = "spark-app-selector";
inline constexpr const char* kSparkOperatorAppLabel = "sparkoperator.k8s.io/app-name";
inline constexpr const char* kAckColocationAnnotation =
    "sparkoperator.k8s.io/koordinator-colocation";

// Kubeflow's training operator, on a job's pods.
inline constexpr const char* kTrainingJobNameLabel = "training.kubeflow.org/job-name";
inline constexpr const char* kTrainingReplicaTypeLabel = "training.kubeflow.org/replica-type";
inline constexpr const char* kTrainingReplicaIndexLabel = "training.kubeflow.org/replica-index";
inline constexpr const char* kTrainingOperatorLabel = "training.kubeflow.org/operator-name";
// mpi-operator v2 names a pod's role here (launcher | worker), not in replica-type.
inline constexpr const char* kTrainingJobRoleLabel = "training.kubeflow.org/job-role";

// Pod groups (scheduler-plugins' coscheduling).
inline constexpr const char* kPodGroupNameLabel = "pod-group.scheduling.sigs.k8s.io/name";
inline constexpr const char* kPodGroupMinLabel = "pod-group.scheduling.sigs.k8s.io/min-available";

// Gleaner's own.
inline constexpr const char* kQueueLabel = "gleaner.io/queue";
// An LS pod's own run-queue wait p99 target under cpuSuppressMode slo ("2ms").
inline constexpr const char* kRunqueueWaitTargetAnnotation = "gleaner.io/runqueue-wait-target";
// An LS pod's request latency p99 objective (a duration); cpuSuppressMode slo derives the
// pod's run-queue wait target from it (docs/qos.md, "Latency objectives").
inline constexpr const char* kLatencyObjectiveAnnotation = "gleaner.io/latency-objective-p99";
inline constexpr const char* kQueueingAnnotation = "gleaner.io/queueing";
inline constexpr const char* kMultiClusterLabel = "gleaner.io/multi-cluster";
inline constexpr const char* kPlacementAnnotation = "gleaner.io/placement";
inline constexpr const char* kOriginAnnotation = "gleaner.io/origin-cluster";
inline constexpr const char* kOriginUidAnnotation = "gleaner.io/origin-uid";
// On an origin placed elsewhere: the state of its copy, as that cluster's operator reports it.
inline constexpr const char* kRemoteStateAnnotation = "gleaner.io/remote-state";
// On a hub's application: how many times it was reclaimed from a member, and the last
// reason (an annotation, not status: a CRD's structural schema would prune an unknown
// status field).
inline constexpr const char* kReclaimsAnnotation = "gleaner.io/reclaims";
inline constexpr const char* kLastReclaimAnnotation = "gleaner.io/last-reclaim";

}  // namespace gleaner::kube
