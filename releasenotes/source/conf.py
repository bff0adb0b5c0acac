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

# nova_ext release notes build configuration (tox -e releasenotes).
# reno reads the notes from the git history of this repository, so build
# from a git checkout:
#
#     sphinx-build -W --keep-going -b html releasenotes/source \
#         releasenotes/build/html

# -- General configuration ---------------------------------------------------

extensions = [
    'openstackdocstheme',
    'reno.sphinxext',
]

templates_path = []
source_suffix = {'.rst': 'restructuredtext'}
master_doc = 'index'

project = 'nova_ext Release Notes'
copyright = '2026, nova_ext developers'

# Release notes are not versioned: one page per series, all in one build.
version = ''
release = ''

exclude_patterns = []
pygments_style = 'native'
highlight_language = 'none'

# -- openstackdocstheme ------------------------------------------------------

openstackdocs_repo_name = 'x/nova-ext'
openstackdocs_bug_project = 'nova-ext'
openstackdocs_bug_tag = 'releasenotes'
openstackdocs_auto_name = False

# -- Options for HTML output -------------------------------------------------

html_theme = 'openstackdocs'
html_static_path = []

# -- Options for Internationalization output ---------------------------------

locale_dirs = ['locale/']
