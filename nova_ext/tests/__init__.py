
from nova_ext.tests import deadline

deadline.arm()
