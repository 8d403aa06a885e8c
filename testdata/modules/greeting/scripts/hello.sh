#!/bin/sh
# Executable: its mode must survive packing and installing.
echo "hello from the greeting module"
