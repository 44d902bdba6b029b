// Canary for check_core_rooms.cmake: a room that is not empty.
#pragma once
