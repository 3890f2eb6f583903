"""Type stubs of the ``wirespeed`` package."""

from . import ad7606 as ad7606
from . import gpio as gpio
from . import lab as lab
from ._wirespeed import Pending as Pending
from ._wirespeed import PreparedMessage as PreparedMessage
from ._wirespeed import SpiDev as SpiDev
from ._wirespeed import Transfer as Transfer

__version__: str
__all__: list[str]
