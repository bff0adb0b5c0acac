# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Compute status traits: the plugins, the engine, the watcher, the consumer.

The trait callbacks (``nova_ext.virt.trait_callbacks`` namespace; the
built-in one in :mod:`.trait_callbacks`) decide which traits the root
compute-node providers of a service carry; this package applies their
answers to placement (:mod:`.engine`), from ``service.update``
notifications (:mod:`.consumer`) and from periodic sweeps of the services
table (:mod:`.watcher`). Its request filters (:mod:`.request_filters`,
``nova_ext.scheduler.request_filters`` namespace) keep computes carrying
those traits out of placement's allocation candidates.
"""
