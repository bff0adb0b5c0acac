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
"""What a cloud holds before anyone uses it, made through its own APIs.

Projects, users and roles, the service catalog, a tiny image, flavors, and
networks: a shared external network with a router for floating IPs, and a
private network in each project.
"""

import os

import openstack
import yaml

from nova_ext_tools.cloud import layout

SERVICES = {
    # name: (type, port key, path)
    'nova': ('compute', 'nova', '/v2.1'),
    'placement': ('placement', 'placement', ''),
    'glance': ('image', 'glance', ''),
    'neutron': ('network', 'neutron', ''),
}


def auth(lay, user):
    project = layout.USERS[user][0] if user in layout.USERS else 'service'
    return {
        'auth_url': lay.keystone,
        'username': user,
        'password': layout.PASSWORD,
        'project_name': project,
        'user_domain_name': 'Default',
        'project_domain_name': 'Default',
    }


def clouds_yaml(lay):
    """Write clouds.yaml: a cloud per user, and ``<user>-stock`` for each.

    A ``-stock`` cloud's compute endpoint is the stock nova-api.
    """
    clouds = {name: _cloud(lay, name) for user in layout.USERS
              for name in (user, user + '-stock')}
    path = lay.path('clouds.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump({'clouds': clouds}, f, default_flow_style=False)
    return path


def connect(lay, user='admin', stock=False, compute=None):
    """An openstacksdk connection as ``user`` (to the stock nova-api).

    :param compute: the port name of another nova-api to use.
    """
    name = user + ('-stock' if stock else '')
    kwargs = _cloud(lay, name)
    if compute:
        kwargs['compute_endpoint_override'] = lay.url(compute, '/v2.1')
    return openstack.connect(**kwargs)


def _cloud(lay, name):
    user = name[:-len('-stock')] if name.endswith('-stock') else name
    kwargs = dict(auth=auth(lay, user), region_name=layout.REGION,
                  identity_api_version='3', interface='public')
    if name.endswith('-stock'):
        kwargs['compute_endpoint_override'] = lay.url('nova_stock', '/v2.1')
    return kwargs


def identity(lay):
    conn = openstack.connect(**_cloud(lay, 'admin'))
    ident = conn.identity
    service_project = ident.create_project(name='service',
                                           domain_id='default')
    roles = {r.name: r for r in ident.roles()}
    for name in ('member', 'reader', 'service'):
        if name not in roles:
            roles[name] = ident.create_role(name=name)
    for name, (stype, port, path) in SERVICES.items():
        user = ident.create_user(name=name, password=layout.PASSWORD,
                                 domain_id='default')
        for role in ('admin', 'service'):
            ident.assign_project_role_to_user(service_project, user,
                                              roles[role])
        service = ident.create_service(name=name, type=stype)
        for interface in ('public', 'internal', 'admin'):
            ident.create_endpoint(
                service_id=service.id, interface=interface,
                url=lay.url(port, path), region_id=layout.REGION)
    projects = {'service': service_project}
    for user, (project, role) in layout.USERS.items():
        if user == 'admin':
            continue
        if project not in projects:
            projects[project] = ident.create_project(
                name=project, domain_id='default')
        u = ident.create_user(name=user, password=layout.PASSWORD,
                              domain_id='default')
        ident.assign_project_role_to_user(projects[project], u, roles[role])
    conn.close()


def resources(lay):
    """Image, flavors, networks; returns what the tests need by name."""
    conn = openstack.connect(**_cloud(lay, 'admin'))
    image_file = lay.path('tiny.img')
    with open(image_file, 'wb') as f:
        f.write(os.urandom(1024))
    image = conn.image.create_image(
        name='tiny', filename=image_file, disk_format='raw',
        container_format='bare', visibility='public', wait=True)
    # huge: more memory than any compute has, so its builds fail to
    # schedule (NoValidHost) and land in cell0.
    for name, ram, disk in (('tiny', 64, 1), ('small', 128, 1),
                            ('huge', 10 ** 8, 1)):
        conn.compute.create_flavor(name=name, ram=ram, vcpus=1, disk=disk)
    public = conn.network.create_network(
        name='public', is_router_external=True, is_shared=False,
        provider_network_type='flat', provider_physical_network='public')
    conn.network.create_subnet(
        network_id=public.id, name='public-subnet', ip_version=4,
        cidr='203.0.113.0/24', gateway_ip='203.0.113.1',
        is_dhcp_enabled=False)
    admin_project = conn.identity.find_project('admin')
    for i, project_name in enumerate(['admin', 'project1', 'project2']):
        project = (admin_project if project_name == 'admin'
                   else conn.identity.find_project(project_name))
        net = conn.network.create_network(name='private-' + project_name,
                                          project_id=project.id)
        subnet = conn.network.create_subnet(
            network_id=net.id, name='private-%s-subnet' % project_name,
            # Documentation ranges: no packet ever leaves this machine.
            ip_version=4, cidr='198.18.%d.0/24' % (i + 1),
            project_id=project.id)
        router = conn.network.create_router(
            name='router-' + project_name, project_id=project.id,
            external_gateway_info={'network_id': public.id})
        conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    conn.close()
    return {'image': image.id}
