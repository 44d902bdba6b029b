// Canary for check_core_rooms.cmake: memory may not depend on connect.
#pragma once
#include "core/connect/send_connector.h"
