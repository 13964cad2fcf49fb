#!/usr/bin/python3
"""Drives the test API server with the official Kubernetes Python client, so the stand-in
answers what real clients expect and not only our own client's reading of the API. Runs
the tests of official_client_objects_test.py (objects, errors, watches, custom resources),
official_client_admission_test.py (mutating webhooks over HTTPS, PriorityClasses),
official_client_errors_test.py (injected failures worded as kube-apiserver words them) and
official_client_deletion_test.py (graceful pod deletion); each also runs on its own. Tests to run may be named as Class or Class.test."""

import unittest

from official_client_admission_test import AdmissionTest
from official_client_deletion_test import GracefulDeletionTest
from official_client_errors_test import InjectedErrorsTest
from official_client_objects_test import ObjectsTest

__all__ = ["ObjectsTest", "AdmissionTest", "InjectedErrorsTest", "GracefulDeletionTest"]

if __name__ == "__main__":
    unittest.main(verbosity=2)
