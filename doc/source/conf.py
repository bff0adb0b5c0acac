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

# nova_ext documentation build configuration.
#
# Build from the repository root with nova_ext installed (the option
# reference and the sample configuration are read from its installed
# ``oslo.config.opts`` entry point, the API reference is imported):
#
#     tox -e docs
#     sphinx-build -W --keep-going -b html doc/source doc/build/html

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.abspath(os.path.join(_HERE, '..', '..'))

# -- General configuration ---------------------------------------------------

extensions = [
    'openstackdocstheme',
    'oslo_config.sphinxext',
    'oslo_config.sphinxconfiggen',
    'sphinx.ext.autodoc',
    'sphinxarg.ext',
]

# oslo_config.sphinxconfiggen: generate _static/nova_ext.conf.sample from
# the same generator file as ``tox -e genconfig``, at every build.
config_generator_config_file = os.path.join(
    _ROOT, 'etc', 'nova_ext', 'config-generator.conf')
sample_config_basename = '_static/nova_ext'

# autodoc: document members in source order, as the contracts read best.
autodoc_member_order = 'bysource'
autodoc_default_options = {
    'members': True,
    'show-inheritance': True,
}

templates_path = []
source_suffix = {'.rst': 'restructuredtext'}
master_doc = 'index'

project = 'nova_ext'
copyright = '2026, nova_ext developers'

exclude_patterns = []
add_module_names = False
show_authors = False
pygments_style = 'native'
# Literal blocks (``::``) are log lines and messages, not Python.
highlight_language = 'none'

# -- openstackdocstheme ------------------------------------------------------

openstackdocs_repo_name = 'x/nova-ext'
openstackdocs_bug_project = 'nova-ext'
openstackdocs_bug_tag = 'doc'
openstackdocs_pdf_link = False
# The project name comes from setup.cfg (nova-ext); keep the module's name,
# which is how operators meet it in nova.conf and logs.
openstackdocs_auto_name = False

# -- Options for HTML output -------------------------------------------------

html_theme = 'openstackdocs'
# _static/ holds nova_ext.css and, once built, the generated sample.
html_static_path = ['_static']
html_css_files = ['nova_ext.css']

# -- Options for LaTeX output ------------------------------------------------

latex_documents = [
    ('index', 'doc-nova-ext.tex', 'nova_ext Documentation',
     'nova_ext developers', 'manual'),
]
