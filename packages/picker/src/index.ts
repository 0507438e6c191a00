/** @damhub/picker: registers `<damhub-picker>` (importing this module defines the element). */
export { DamhubPicker, type PickerSelectDetail } from './picker.js';
