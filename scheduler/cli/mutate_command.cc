// `gleaner-scheduler mutate --pod FILE`: the colocation webhook's answer for one pod,
// offline. It runs the webhook's own review (admission_review.h) on an AdmissionReview
// built from the pod, so what it prints is what the live webhook answers for the same
// profiles, namespace labels and PriorityClasses.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/cli_main.h"
#include "kube/config.h"
#include "scheduler/admission/admission_review.h"
#include "scheduler/admission/manifest_files.h"
#include "scheduler/admission/priority_class.h"
#include "scheduler/cli/commands.h"

namespace gleaner::scheduler {
namespace {

struct MutateArgs {
  std::string pod;
  std::string profiles;
  std::string priority_classes;
  std::vector<std::string> namespace_labels;
  std::string scheduler_name = "gleaner-scheduler";
  bool assign_scheduler = true;
  bool review = false;
};

int fail(const std::string& message) {
  std::cerr << "gleaner-scheduler mutate: " << message << "\n";
  return kExitUsage;
}

int run_mutate(const MutateArgs& args) {
  auto pods = admission::read_objects(args.pod);
  if (!pods) return fail(pods.error().message);
  if (pods->size() != 1 || string_at(pods->front(), "kind", "Pod") != "Pod")
    return fail(args.pod + ": expected exactly one Pod");
  const Json& pod = pods->front();

  std::vector<admission::ColocationProfile> profiles;
  if (!args.profiles.empty()) {
    auto objects = admission::read_manifest_objects(args.profiles);
    if (!objects) return fail(objects.error().message);
    auto parsed = admission::parse_colocation_profiles(*objects);
    if (!parsed) return fail(parsed.error().message);
    profiles = std::move(parsed->profiles);
    for (const auto& s : parsed->skipped)
      std::cerr << "gleaner-scheduler mutate: note: " << s << "\n";
    // Every profile's unsupported fields, whether or not it matches this pod (the answer
    // repeats those of the profiles that applied).
    for (const auto& p : profiles)
      for (const auto& w : p.warnings)
        std::cerr << "gleaner-scheduler mutate: warning: " << w << "\n";
  }
  admission::PriorityClasses classes;
  if (!args.priority_classes.empty()) {
    auto objects = admission::read_objects(args.priority_classes);
    if (!objects) return fail(objects.error().message);
    auto parsed = admission::parse_priority_classes(*objects);
    if (!parsed) return fail(args.priority_classes + ": " + parsed.error().message);
    classes = std::move(*parsed);
  }
  Labels ns_labels;
  for (const auto& kv : args.namespace_labels) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail("--namespace-labels: " + kv + " is not KEY=VALUE");
    ns_labels[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const Json* ns = find_path(pod, "metadata/namespace");
  const std::string namespace_name =
      ns != nullptr && ns->is_string() ? ns->get<std::string>() : "default";

  admission::MutationInputs in;
  in.profiles = &profiles;
  in.namespace_labels = admission::namespace_labels_of(namespace_name, ns_labels);
  if (args.assign_scheduler) in.batch_scheduler = args.scheduler_name;
  in.priority_class = [&](const std::string& name) -> std::optional<admission::PriorityClassInfo> {
    auto it = classes.find(name);
    if (it == classes.end()) return std::nullopt;
    return it->second;
  };
  const Json review{
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "gleaner-mutate"},
        {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
        {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
        {"operation", "CREATE"},
        {"namespace", namespace_name},
        {"name", find_path(pod, "metadata/name") ? *find_path(pod, "metadata/name") : Json("")},
        {"dryRun", true},
        {"object", pod}}}};
  auto request = admission::parse_admission_review(review);
  if (!request) return fail(args.pod + ": " + request.error().message);
  const admission::AdmissionResponse answer = admission::review_pod(*request, in);
  Json out = answer.review;
  if (!args.review) {
    out = answer.review["response"];
    out.erase("uid");
    if (out.contains("patch")) {
      auto decoded = kube::base64_decode(out["patch"].get<std::string>());
      if (!decoded) return fail(decoded.error().message);
      out["patch"] = Json::parse(*decoded);
    }
    out["outcome"] = admission::to_string(answer.outcome);
    if (answer.outcome != admission::Outcome::kDenied && !answer.message.empty())
      out["appliedBy"] = answer.message;
  }
  std::cout << out.dump(2) << "\n";
  std::cout.flush();
  if (!std::cout) return 1;
  return answer.outcome == admission::Outcome::kDenied ? 3 : 0;
}

}  // namespace

void register_mutate_command(CLI::App& app) {
  auto args = std::make_shared<MutateArgs>();
  auto* cmd = app.add_subcommand(
      "mutate",
      "Print the colocation webhook's answer for a pod (kubectl get pod -o json/yaml output)");
  cmd->add_option("--pod", args->pod, "Pod manifest, JSON or YAML")->required();
  cmd->add_option("--profiles", args->profiles,
                  "ClusterColocationProfiles: a file or a directory of manifests");
  cmd->add_option("--priority-classes", args->priority_classes,
                  "PriorityClasses the profiles may name (e.g. kubectl get priorityclasses -o "
                  "yaml, or deploy/manifests/priority-classes/priority-classes.yaml)");
  cmd->add_option("--namespace-labels", args->namespace_labels,
                  "Labels of the pod's namespace, KEY=VALUE (repeat or comma-separate)")
      ->delimiter(',');
  cmd->add_option("--scheduler-name", args->scheduler_name,
                  "the scheduler a batch pod naming none (or default-scheduler) is given, as "
                  "run's --scheduler-name")
      ->capture_default_str();
  cmd->add_option("--assign-scheduler", args->assign_scheduler,
                  "give batch pods --scheduler-name (false: as run's "
                  "--webhook-assign-scheduler=false, leave spec.schedulerName alone)")
      ->capture_default_str();
  cmd->add_flag("--review", args->review,
                "Print the AdmissionReview exactly as the webhook sends it (patch base64)");
  cmd->callback([args] { set_exit_code(run_mutate(*args)); });
}

}  // namespace gleaner::scheduler
