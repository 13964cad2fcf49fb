#pragma once
// scheduling.k8s.io/v1 PriorityClass: the value and preemption policy a class name
// resolves to, for the colocation webhook and for jobs that name a class.

#include <map>
#include <string>
#include <vector>

#include "common/json_fwd.h"
#include "common/result.h"
#include "scheduler/admission/colocation_mutation.h"

namespace gleaner::scheduler::admission {

using PriorityClasses = std::map<std::string, PriorityClassInfo>;

// One PriorityClass object; errors name the class and the field.
Result<std::pair<std::string, PriorityClassInfo>> parse_priority_class(const Json& object);
// Every PriorityClass among `objects` (other kinds are skipped).
Result<PriorityClasses> parse_priority_classes(const std::vector<Json>& objects);

}  // namespace gleaner::scheduler::admission
