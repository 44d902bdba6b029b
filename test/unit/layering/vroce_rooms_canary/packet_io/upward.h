// Canary for check_vroce_rooms.cmake: packet_io may not depend on core.
#pragma once
#include "core/qp.h"
