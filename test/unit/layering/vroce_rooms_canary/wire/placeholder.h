// Canary for check_vroce_rooms.cmake: a room that is not empty.
#pragma once
